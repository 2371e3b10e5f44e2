import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/errors.ts';
import type { AnyRoute } from '../../src/http/route.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import type { ApiResponse } from '../support/http.ts';
import { sendRaw } from '../support/raw-request.ts';

/**
 * Property: whatever arrives (bodies, headers, query strings, cursors, ids, methods), the API
 * never answers 5xx and always answers a well-formed envelope. Bodies include hostile ones:
 * nesting up to 100,000 levels, up to 300,000 keys, invalid UTF-8 and long strings in every
 * field of the route's body schema. CI runs a fixed seed; a larger run:
 * FUZZ_RUNS=2000 FUZZ_SEED=<any> npm test -- test/http/fuzz.test.ts
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 60);
const SEED = Number(process.env.FUZZ_SEED ?? 20261121);

const printable = fc.stringMatching(/^[\x20-\x7e]{0,200}$/);
const hex24 = fc.stringMatching(/^[0-9a-f]{24}$/);
const idSegment = fc.oneof(hex24, printable, fc.constantFrom('', '..', '%00', '%E2%82', 'ﬀ', '0'.repeat(25), 'G'.repeat(24)));
const queryValue = fc.oneof(printable, fc.integer().map(String), fc.constantFrom('', '0', '101', '1e2', '-1', 'null', 'eyJ9.eyJ9'));
const jsonBody = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.record(
    {
      email: fc.oneof(fc.emailAddress(), printable, fc.integer()),
      first_name: fc.oneof(printable, fc.constant(null)),
      tags: fc.oneof(fc.array(printable, { maxLength: 5 }), printable),
      custom_fields: fc.oneof(fc.dictionary(printable, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }), fc.array(fc.integer())),
    },
    { requiredKeys: [] },
  ),
);

const deepNesting = fc
  .tuple(fc.integer({ min: 20, max: 100_000 }), fc.constantFrom('[', '{"a":'), fc.boolean())
  .map(([depth, open, wrapped]) => {
    const inner = open === '[' ? '['.repeat(depth) + ']'.repeat(depth) : open.repeat(depth) + '{}' + '}'.repeat(depth);
    return wrapped ? `{"custom_fields":${inner}}` : inner;
  });
const hugeKeyCount = fc
  .integer({ min: 900, max: 300_000 })
  .map((count) => `{${Array.from({ length: count }, (_, i) => `"k${i}":${i}`).join(',')}}`);
/** JSON with a byte sequence that is not UTF-8 spliced in (a stray byte, a truncated or overlong form, a surrogate). */
const invalidUtf8 = fc
  .tuple(
    jsonBody,
    fc.constantFrom([0xff], [0xc3], [0xe2, 0x82], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80]),
    fc.nat(),
  )
  .map(([value, bad, at]) => {
    const text = Buffer.from(JSON.stringify(value) ?? 'null');
    const cut = at % (text.length + 1);
    return Buffer.concat([text.subarray(0, cut), Buffer.from(bad), text.subarray(cut)]);
  });
const longString = fc
  .tuple(
    fc.constantFrom('a', 'é', '😀', '"', '\\', '\u0000', '<'),
    fc.oneof(fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 5_000, max: 400_000 })),
  )
  .map(([unit, count]) => unit.repeat(count));

/** The top-level field names of a route's body schema (valibot's pipe keeps the object's entries). */
function bodyFieldsOf(route: Pick<AnyRoute, 'body'>): string[] {
  const schema = route.body as { entries?: Record<string, unknown> } | undefined;
  return schema?.entries ? Object.keys(schema.entries) : ['email', 'name'];
}

/** A long string in every field of the route's body. */
function longStringsIn(fields: string[]): fc.Arbitrary<string> {
  return fc
    .tuple(...fields.map(() => longString))
    .map((values) => JSON.stringify(Object.fromEntries(fields.map((f, i) => [f, values[i]]))));
}

function requestShapeFor(fields: string[]) {
  return fc.record({
    id: idSegment,
    query: fc.dictionary(fc.oneof(fc.constantFrom('limit', 'cursor', 'thread_id', 'status'), printable), queryValue, { maxKeys: 4 }),
    idempotencyKey: fc.option(printable, { nil: undefined }),
    contentType: fc.constantFrom(
      'application/json',
      'text/plain',
      'application/json; charset=latin1',
      'application/x-www-form-urlencoded',
      'multipart/form-data',
      '',
    ),
    body: fc.oneof(
      { arbitrary: jsonBody.map((v): string | Buffer => JSON.stringify(v) ?? 'null'), weight: 4 },
      { arbitrary: printable, weight: 1 },
      { arbitrary: fc.constant(undefined), weight: 1 },
      { arbitrary: deepNesting, weight: 1 },
      { arbitrary: hugeKeyCount, weight: 1 },
      { arbitrary: invalidUtf8, weight: 1 },
      { arbitrary: longStringsIn(fields), weight: 2 },
    ),
    auth: fc.constantFrom('valid', 'none', 'garbage'),
  });
}
const requestShape = requestShapeFor(['email', 'name']);

/** A body short enough for a failure message. */
function abbreviated(body: string | Buffer | undefined): string | undefined {
  if (body === undefined) return undefined;
  const text = Buffer.isBuffer(body) ? body.toString('latin1') : body;
  return text.length > 300 ? `${text.slice(0, 300)}… (${text.length} characters)` : text;
}

function expectEnvelope(response: ApiResponse, context: string): void {
  expect(response.status, context).toBeLessThan(500);
  const body = response.body;
  expect(typeof body.ok, context).toBe('boolean');
  expect(typeof body.meta?.request_id, context).toBe('string');
  if (body.ok) {
    expect('data' in body, context).toBe(true);
  } else {
    expect(ERROR_CODES, context).toContain(body.error?.code);
    expect(typeof body.error?.message, context).toBe('string');
    expect(body.error?.docs_url, context).toMatch(/^http:\/\/herald\.test\/docs\/api\/errors\/[a-z_]+$/);
  }
}

describe('fuzz: no 5xx and a valid envelope for any input', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(() => h.close());

  type RequestInput = typeof requestShape extends fc.Arbitrary<infer T> ? T : never;

  async function send(route: Pick<AnyRoute, 'method' | 'path'>, input: RequestInput): Promise<ApiResponse> {
    const path = `/api/v1${route.path.replace(/:[A-Za-z0-9_]+/g, encodeURIComponent(input.id))}`;
    const query = new URLSearchParams(input.query).toString();
    const headers: Record<string, string> = {};
    if (input.auth === 'valid') headers.authorization = `Bearer ${h.workspace.key}`;
    if (input.auth === 'garbage') headers.authorization = 'Bearer garbage';
    if (input.idempotencyKey !== undefined) headers['idempotency-key'] = input.idempotencyKey;
    if (input.contentType) headers['content-type'] = input.contentType;
    const url = `${h.api.url}${path}${query ? `?${query}` : ''}`;
    if (route.method !== 'GET' && input.body !== undefined) {
      return sendRaw({ method: route.method, url, headers, body: Buffer.from(input.body) });
    }
    const response = await fetch(url, { method: route.method, headers });
    const text = await response.text();
    let body: ApiResponse['body'];
    try {
      body = JSON.parse(text) as ApiResponse['body'];
    } catch {
      body = { unparsable: text };
    }
    return { status: response.status, headers: response.headers, body };
  }

  it('holds on every mounted route', async () => {
    for (const route of h.api.routes) {
      await fc.assert(
        fc.asyncProperty(requestShapeFor(bodyFieldsOf(route)), async (input) => {
          const response = await send(route, input);
          // A download's success is its bytes, in the declared type; every other answer is an envelope.
          if (route.response.binary && response.status === route.response.status) {
            expect(response.headers.get('content-type')).toBe(route.response.binary.contentType);
            return;
          }
          expectEnvelope(
            response,
            `${route.method} ${route.path} ${JSON.stringify({ ...input, body: abbreviated(input.body) })} → ${JSON.stringify(response.body)}`,
          );
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
    }
  }, 300_000);

  it('holds for hostile bodies sent with a valid key, JSON content type and Idempotency-Key to every write route', async () => {
    for (const route of h.api.routes.filter((r) => r.method !== 'GET')) {
      const hostile = fc.record({
        id: fc.oneof(hex24, idSegment),
        query: fc.constant({}),
        idempotencyKey: fc.stringMatching(/^[A-Za-z0-9-]{8,64}$/),
        contentType: fc.constant('application/json'),
        body: fc.oneof(deepNesting, hugeKeyCount, invalidUtf8, longStringsIn(bodyFieldsOf(route))),
        auth: fc.constant('valid' as const),
      });
      await fc.assert(
        fc.asyncProperty(hostile, async (input) => {
          const response = await send(route, input);
          expectEnvelope(response, `${route.method} ${route.path} ${abbreviated(input.body)} → ${JSON.stringify(response.body)}`);
        }),
        { numRuns: Math.ceil(RUNS / 3), seed: SEED, endOnFailure: true },
      );
    }
  }, 300_000);

  it('holds on arbitrary methods and paths', async () => {
    const method = fc.constantFrom('GET', 'POST', 'PATCH', 'PUT', 'DELETE', 'OPTIONS');
    const path = fc
      .array(fc.oneof(printable, hex24, fc.constantFrom('contacts', 'me', 'webhooks', 'inbox')), { maxLength: 4 })
      .map((parts) => `/${parts.map(encodeURIComponent).join('/')}`);
    await fc.assert(
      fc.asyncProperty(method, path, requestShape, async (m, p, input) => {
        const response = await send({ method: m as AnyRoute['method'], path: p }, input);
        if (m === 'OPTIONS' && response.status === 200) return;
        expectEnvelope(response, `${m} ${p} ${abbreviated(input.body)} → ${JSON.stringify(response.body)}`);
      }),
      { numRuns: RUNS * 2, seed: SEED, endOnFailure: true },
    );
  }, 300_000);
});
