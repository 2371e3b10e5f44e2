import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIB } from '../../src/http/body-limits.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { expectError, type ApiResponse } from '../support/http.ts';

describe('request bodies', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(() => h.close());

  it('answers 400 invalid_request MALFORMED_JSON for broken JSON', async () => {
    const response = await h.request('POST', '/api/v1/contacts', { headers: idem(), body: '{"email": "a@example.com",' });
    expectError(response, 400, 'invalid_request');
    expect(response.body.error?.details).toEqual({ reason: 'MALFORMED_JSON' });
  });

  it.each(['"just a string"', '42', 'null'])('answers 400 for a JSON body that is not an object: %s', async (raw) => {
    expectError(await h.request('POST', '/api/v1/contacts', { headers: idem(), body: raw }), 400, 'invalid_request');
  });

  it('answers 400 for an array body', async () => {
    const response = await h.request('POST', '/api/v1/contacts', { headers: idem(), body: [{ email: 'a@example.com' }] });
    expectError(response, 400, 'invalid_request');
  });

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'application/xml'])(
    'answers 400 UNSUPPORTED_CONTENT_TYPE for %s',
    async (type) => {
      const response = await h.request('POST', '/api/v1/contacts', {
        headers: { ...idem(), 'content-type': type },
        body: 'email=a@example.com',
      });
      expectError(response, 400, 'invalid_request');
      expect(response.body.error?.details).toMatchObject({ reason: 'UNSUPPORTED_CONTENT_TYPE' });
    },
  );

  it('accepts application/json with a charset and vendor +json types', async () => {
    const a = await h.request('POST', '/api/v1/contacts', {
      headers: { ...idem(), 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ email: 'charset@example.com' }),
    });
    expect(a.status, JSON.stringify(a.body)).toBe(201);
    const b = await h.request('POST', '/api/v1/contacts', {
      headers: { ...idem(), 'content-type': 'application/vnd.herald+json' },
      body: JSON.stringify({ email: 'vendor@example.com' }),
    });
    expect(b.status, JSON.stringify(b.body)).toBe(201);
  });

  /** Streams `bytes` of JSON without a Content-Length (chunked), so only the stream can be counted. */
  function streamBody(bytes: number): Promise<ApiResponse> {
    return new Promise((resolve, reject) => {
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
            'transfer-encoding': 'chunked',
            ...idem(),
          },
        },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: new Headers(res.headers as Record<string, string>),
              body: JSON.parse(text) as ApiResponse['body'],
            }),
          );
        },
      );
      req.on('error', (error: NodeJS.ErrnoException) =>
        error.code === 'EPIPE' || error.code === 'ECONNRESET' ? undefined : reject(error),
      );
      const chunk = 'x'.repeat(16 * 1024);
      req.write('{"email":"big@example.com","company":"');
      let sent = 0;
      const pump = () => {
        while (sent + chunk.length < bytes) {
          sent += chunk.length;
          if (!req.write(chunk)) {
            req.once('drain', pump);
            return;
          }
        }
        req.end('"}');
      };
      pump();
    });
  }

  it("answers 413 REQUEST_TOO_LARGE for a body over the route's 1 MiB, counted from the stream (no Content-Length)", async () => {
    const response = await streamBody(26 * MIB);
    expectError(response, 413, 'payload_too_large');
    expect(response.body.error?.details).toEqual({ reason: 'REQUEST_TOO_LARGE', limit_bytes: MIB });
  });

  it("reads a body just under the route's 1 MiB (then validation answers)", async () => {
    const response = await streamBody(MIB - 100);
    expectError(response, 400, 'invalid_request');
    expect(JSON.stringify(response.body.error?.details)).toContain('company');
  });

  it('refuses an oversized Content-Length before reading', async () => {
    const response = await new Promise<number>((resolve) => {
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
            'content-length': String(30 * 1024 * 1024),
            ...idem(),
          },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', () => {});
      req.write('{');
    });
    expect(response).toBe(413);
  });
});

describe('NUL characters', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(() => h.close());

  it.each([
    [{ email: 'nul@example.com', first_name: 'A\u0000B' }, 'first_name'],
    [{ email: 'nul@example.com', tags: ['ok', 'b\u0000d'] }, 'tags.1'],
    [{ email: 'nul@example.com', custom_fields: { deep: { x: '\u0000' } } }, 'custom_fields.deep.x'],
  ])('answers 400 naming the field instead of failing in the database: %j', async (body, path) => {
    const response = await h.request('POST', '/api/v1/contacts', { headers: idem(), body });
    expectError(response, 400, 'invalid_request');
    expect(response.body.error?.details).toEqual({
      fields: [{ path, location: 'body', type: 'nul_character', message: 'NUL characters are not allowed' }],
    });
  });

  it('refuses a NUL in a query parameter', async () => {
    expectError(await h.request('GET', '/api/v1/contacts?email=a%00b@example.com'), 400, 'invalid_request');
  });
});
