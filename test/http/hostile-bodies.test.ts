import { request as httpRequest } from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_BODY_LIMIT, JSON_BOUNDS, MIB, bodyLimitOf } from '../../src/http/body-limits.ts';
import { isWrite } from '../../src/http/route.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { expectError, type ApiResponse } from '../support/http.ts';
import { sendRaw } from '../support/raw-request.ts';

const SAMPLE_ID = '0123456789abcdef01234567';

/** `{"k0":0,"k1":1,…}` with `count` keys. */
function objectWithKeys(count: number): string {
  return `{${Array.from({ length: count }, (_, i) => `"k${i}":${i}`).join(',')}}`;
}

/** `levels` objects nested inside each other: `{"a":{"a":{}}}` is 3 levels. */
function nestedObjects(levels: number): string {
  return '{"a":'.repeat(levels - 1) + '{}' + '}'.repeat(levels - 1);
}

/** JSON text of exactly `bytes` bytes: one string member padded to size. */
function paddedJson(bytes: number): Buffer {
  return Buffer.from(`{"p":"${'a'.repeat(bytes - 8)}"}`);
}

describe('hostile request bodies', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(() => h.close());

  const post = (path: string, body: Buffer | { chunks: Iterable<Buffer> }, headers: Record<string, string> = {}): Promise<ApiResponse> =>
    sendRaw({
      method: 'POST',
      url: `${h.api.url}/api/v1${path}`,
      headers: { authorization: `Bearer ${h.workspace.key}`, 'content-type': 'application/json', ...idem(), ...headers },
      body,
    });
  const contact = (fields: string) => Buffer.from(`{"email":"hostile-${Math.random().toString(36).slice(2)}@example.com",${fields}}`);
  const expectReason = (response: ApiResponse, status: number, code: string, reason: string) => {
    expectError(response, status, code);
    expect(response.body.error?.details?.reason, JSON.stringify(response.body)).toBe(reason);
  };

  it('answers 400 JSON_TOO_DEEP to an array nested 100,000 levels deep (200 KB), not 500', async () => {
    const response = await post('/contacts', Buffer.from('['.repeat(100_000) + ']'.repeat(100_000)));
    expectReason(response, 400, 'invalid_request', 'JSON_TOO_DEEP');
    expect(response.body.error?.details?.limit).toBe(JSON_BOUNDS.depth);
    expect(response.body.error?.message).toContain(`deeper than ${JSON_BOUNDS.depth} levels`);
  });

  it(`accepts ${JSON_BOUNDS.depth} levels of nesting and refuses one more`, async () => {
    const atLimit = await post('/contacts', contact(`"custom_fields":${nestedObjects(JSON_BOUNDS.depth - 1)}`));
    expect(atLimit.status, JSON.stringify(atLimit.body)).toBe(201);
    expectReason(
      await post('/contacts', contact(`"custom_fields":${nestedObjects(JSON_BOUNDS.depth)}`)),
      400,
      'invalid_request',
      'JSON_TOO_DEEP',
    );
  });

  it('answers 413 REQUEST_TOO_LARGE to a 16.8 MB object with 1,000,000 keys, from its Content-Length', async () => {
    const body = Buffer.from(objectWithKeys(1_000_000));
    expect(body.length).toBeGreaterThan(16 * MIB);
    const response = await post('/contacts', body);
    expectReason(response, 413, 'payload_too_large', 'REQUEST_TOO_LARGE');
    expect(response.body.error?.details?.limit_bytes).toBe(DEFAULT_BODY_LIMIT);
  });

  it('answers 413 at once to a Content-Length of 4 GiB + 1 KiB (no 32-bit wrap to 1 KiB)', async () => {
    const response = await new Promise<ApiResponse>((resolve, reject) => {
      const url = new URL(`${h.api.url}/api/v1/contacts`);
      const req = httpRequest(
        {
          method: 'POST',
          hostname: url.hostname,
          port: url.port,
          path: url.pathname,
          headers: {
            authorization: `Bearer ${h.workspace.key}`,
            'content-type': 'application/json',
            'content-length': String(4 * 1024 * MIB + 1024),
            ...idem(),
          },
        },
        (res) => {
          const parts: Buffer[] = [];
          res.on('data', (chunk: Buffer) => parts.push(chunk));
          res.on('end', () => {
            req.destroy();
            resolve({
              status: res.statusCode ?? 0,
              headers: new Headers(),
              body: JSON.parse(Buffer.concat(parts).toString()) as ApiResponse['body'],
            });
          });
        },
      );
      req.on('error', (error: NodeJS.ErrnoException) =>
        error.code === 'ECONNRESET' || error.code === 'EPIPE' ? undefined : reject(error),
      );
      req.write(`{"email":"a@example.com","company":"${'x'.repeat(900)}"}`);
    });
    expectReason(response, 413, 'payload_too_large', 'REQUEST_TOO_LARGE');
  });

  it('answers 413 REQUEST_TOO_LARGE to the same object sent chunked, counting the bytes as they arrive', async () => {
    const keys = Buffer.from(objectWithKeys(1_000_000));
    function* slices() {
      for (let at = 0; at < keys.length; at += 64 * 1024) yield keys.subarray(at, at + 64 * 1024);
    }
    expectReason(await post('/contacts', { chunks: slices() }), 413, 'payload_too_large', 'REQUEST_TOO_LARGE');
  });

  it('answers 400 JSON_TOO_MANY_KEYS to 1,000,000 keys on the send route, whose byte limit admits them', async () => {
    const response = await post('/outbox/emails', Buffer.from(objectWithKeys(1_000_000)));
    expectReason(response, 400, 'invalid_request', 'JSON_TOO_MANY_KEYS');
    expect(response.body.error?.details?.limit).toBe(JSON_BOUNDS.keys);
  });

  it(`accepts ${JSON_BOUNDS.keys} keys in one object and refuses one more before validation`, async () => {
    const atLimit = await post('/contacts', contact(`"custom_fields":${objectWithKeys(JSON_BOUNDS.keys)}`));
    expect(atLimit.status, JSON.stringify(atLimit.body)).toBe(201);
    expectReason(
      await post('/contacts', contact(`"custom_fields":${objectWithKeys(JSON_BOUNDS.keys + 1)}`)),
      400,
      'invalid_request',
      'JSON_TOO_MANY_KEYS',
    );
  });

  it(`refuses an array of more than ${JSON_BOUNDS.items} items before validation, and leaves smaller ones to the schema`, async () => {
    const tags = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => `t${i}`));
    expectReason(await post('/contacts', contact(`"tags":${tags(JSON_BOUNDS.items + 1)}`)), 400, 'invalid_request', 'JSON_TOO_MANY_ITEMS');
    const validated = await post('/contacts', contact(`"tags":${tags(JSON_BOUNDS.items)}`));
    expectError(validated, 400, 'invalid_request');
    expect(validated.body.error?.details?.fields).toEqual([expect.objectContaining({ path: 'tags', type: 'max_length' })]);
  });

  it(`bounds the values of a whole body at ${JSON_BOUNDS.values}, however they are spread`, async () => {
    const arrays = (n: number) =>
      `{${Array.from({ length: n }, (_, i) => `"k${i}":[${new Array(JSON_BOUNDS.items).fill(0).join(',')}]`).join(',')}}`;
    const within = Math.floor(JSON_BOUNDS.values / (JSON_BOUNDS.items + 1)) - 1;
    const atLimit = await post('/contacts', contact(`"custom_fields":${arrays(within)}`));
    expect(atLimit.status, JSON.stringify(atLimit.body)).toBe(201);
    const over = await post('/contacts', contact(`"custom_fields":${arrays(within + 2)}`));
    expectReason(over, 400, 'invalid_request', 'JSON_TOO_MANY_VALUES');
    expect(over.body.error?.details?.limit).toBe(JSON_BOUNDS.values);
  });

  it(`answers 400 unknown_field to a body of ${JSON_BOUNDS.keys} unknown keys`, async () => {
    const response = await post('/contacts', Buffer.from(objectWithKeys(JSON_BOUNDS.keys)));
    expectError(response, 400, 'invalid_request');
    const fields = response.body.error?.details?.fields as { path: string; type: string }[];
    expect(fields).toContainEqual(expect.objectContaining({ path: 'k0', type: 'unknown_field' }));
  });

  it('answers 400 MALFORMED_JSON to invalid UTF-8', async () => {
    const body = Buffer.concat([contact('"first_name":"').subarray(0, -1), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]);
    const response = await post('/contacts', body);
    expectReason(response, 400, 'invalid_request', 'MALFORMED_JSON');
    expect(response.body.error?.message).toContain('UTF-8');
  });

  it('counts the decoded bytes of a gzip body: a small gzip inflating past 1 MiB answers 413', async () => {
    const bomb = gzipSync(contact(`"company":"${' '.repeat(8 * MIB)}"`));
    expect(bomb.length).toBeLessThan(64 * 1024);
    expectReason(await post('/contacts', bomb, { 'content-encoding': 'gzip' }), 413, 'payload_too_large', 'REQUEST_TOO_LARGE');
    const small = await post('/contacts', gzipSync(contact('"company":"Acme"')), { 'content-encoding': 'gzip' });
    expect(small.status, JSON.stringify(small.body)).toBe(201);
  });

  it('answers 400 to an unknown Content-Encoding', async () => {
    expectError(await post('/contacts', contact('"company":"Acme"'), { 'content-encoding': 'zstd-weird' }), 400, 'invalid_request');
  });
});

describe('per-route body limits', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(() => h.close());

  it('gives only the transactional sends (one, and a batch limited as one) more than 1 MiB', () => {
    const large = h.api.routes.filter((r) => bodyLimitOf(r) > DEFAULT_BODY_LIMIT).map((r) => r.operationId);
    expect(large.sort()).toEqual(['sendEmail', 'sendEmailBatch']);
  });

  it("answers 413 one byte over each write route's limit and reads a body of exactly the limit", async () => {
    for (const route of h.api.routes.filter(isWrite)) {
      const limit = bodyLimitOf(route);
      const url = `${h.api.url}/api/v1${route.path.replace(/:[A-Za-z0-9_]+/g, SAMPLE_ID)}`;
      const send = (body: Buffer) =>
        sendRaw({
          method: route.method,
          url,
          headers: { authorization: `Bearer ${h.workspace.key}`, 'content-type': 'application/json', ...idem() },
          body,
        });
      const over = await send(paddedJson(limit + 1));
      expectError(over, 413, 'payload_too_large');
      expect(over.body.error?.details, route.operationId).toEqual({ reason: 'REQUEST_TOO_LARGE', limit_bytes: limit });
      const exact = await send(paddedJson(limit));
      expect(exact.status, `${route.operationId} ${JSON.stringify(exact.body)}`).not.toBe(413);
      expect(exact.status, `${route.operationId} ${JSON.stringify(exact.body)}`).toBeLessThan(500);
    }
  }, 120_000);
});
