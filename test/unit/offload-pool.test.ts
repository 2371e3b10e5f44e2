import { afterAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.ts';
import { JSON_BOUNDS } from '../../src/http/body-limits.ts';
import { requestFingerprint } from '../../src/canonical-json.ts';
import { parseJsonBody } from '../../src/http/json-body.ts';
import { decodeBase64 } from '../../src/modules/sends/sends.fns.ts';
import { createOffloadPool } from '../../src/offload/offload-pool.ts';

describe('offload pool', () => {
  const pool = createOffloadPool();
  afterAll(() => pool.close());

  it('parses a body as parseJsonBody does, with the request fingerprint', async () => {
    const body = { email: 'a@example.com', tags: ['x', 'y'], custom_fields: { b: 1, a: [true, null, 'é'] } };
    const bytes = Buffer.from(JSON.stringify(body));
    const parsed = await pool.parseJson(Buffer.from(bytes), 'POST', '/api/v1/contacts');
    expect(parsed.value).toEqual(parseJsonBody(bytes, JSON_BOUNDS));
    expect(parsed.fingerprint).toBe(requestFingerprint('POST', '/api/v1/contacts', body));
  });

  it.each([
    ['[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]', 'JSON_TOO_DEEP'],
    ['{"a":', 'MALFORMED_JSON'],
  ])('rejects %s with the same AppError as inline parsing (%s)', async (text, reason) => {
    const error = await pool.parseJson(Buffer.from(text), 'POST', '/x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('invalid_request');
    expect((error as AppError).details?.reason).toBe(reason);
  });

  it('decodes base64 as decodeBase64 does, and answers null for text that is not base64', async () => {
    const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));
    const text = bytes.toString('base64');
    expect((await pool.decodeBase64(text))?.equals(bytes)).toBe(true);
    expect(await pool.decodeBase64('not base64!')).toBe(decodeBase64('not base64!'));
  });

  it('keeps answering after it was closed (a new thread starts)', async () => {
    await pool.close();
    expect((await pool.parseJson(Buffer.from('{"a":1}'), 'POST', '/x')).value).toEqual({ a: 1 });
  });
});
