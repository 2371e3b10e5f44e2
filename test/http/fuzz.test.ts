import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/errors.ts';
import type { AnyRoute } from '../../src/http/route.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import type { ApiResponse } from '../support/http.ts';

/**
 * Property: whatever arrives (bodies, headers, query strings, cursors, ids, methods), the API
 * never answers 5xx and always answers a well-formed envelope. CI runs a fixed seed; a larger
 * run: FUZZ_RUNS=2000 FUZZ_SEED=<any> npm test -- test/http/fuzz.test.ts
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

const requestShape = fc.record({
  id: idSegment,
  query: fc.dictionary(fc.oneof(fc.constantFrom('limit', 'cursor', 'thread_id', 'status'), printable), queryValue, { maxKeys: 4 }),
  idempotencyKey: fc.option(printable, { nil: undefined }),
  contentType: fc.constantFrom('application/json', 'text/plain', 'application/json; charset=latin1', 'application/x-www-form-urlencoded', 'multipart/form-data', ''),
  body: fc.oneof(jsonBody.map((v) => JSON.stringify(v) ?? 'null'), printable, fc.constant(undefined)),
  auth: fc.constantFrom('valid', 'none', 'garbage'),
});

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
    const sendsBody = route.method !== 'GET' && input.body !== undefined;
    const response = await fetch(`${h.api.url}${path}${query ? `?${query}` : ''}`, {
      method: route.method,
      headers,
      ...(sendsBody ? { body: input.body } : {}),
    });
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
        fc.asyncProperty(requestShape, async (input) => {
          const response = await send(route, input);
          expectEnvelope(response, `${route.method} ${route.path} ${JSON.stringify(input)} → ${JSON.stringify(response.body)}`);
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
    }
  }, 300_000);

  it('holds on arbitrary methods and paths', async () => {
    const method = fc.constantFrom('GET', 'POST', 'PATCH', 'PUT', 'DELETE', 'OPTIONS');
    const path = fc.array(fc.oneof(printable, hex24, fc.constantFrom('contacts', 'me', 'webhooks', 'inbox')), { maxLength: 4 }).map((parts) => `/${parts.map(encodeURIComponent).join('/')}`);
    await fc.assert(
      fc.asyncProperty(method, path, requestShape, async (m, p, input) => {
        const response = await send({ method: m as AnyRoute['method'], path: p }, input);
        if (m === 'OPTIONS' && response.status === 200) return;
        expectEnvelope(response, `${m} ${p} → ${JSON.stringify(response.body)}`);
      }),
      { numRuns: RUNS * 2, seed: SEED, endOnFailure: true },
    );
  }, 300_000);
});
