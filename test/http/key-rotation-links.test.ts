import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUploadUrlSigner } from '../../src/modules/attachments/upload-url.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { expectError, type ApiResponse } from '../support/http.ts';
import { TEST_ENCRYPTION_KEY } from '../support/stack.ts';

/**
 * A running api after a key rotation (HERALD_ENCRYPTION_KEY new, HERALD_ENCRYPTION_KEYS_PREVIOUS
 * the old one): an upload URL handed out under the old key still uploads, a new one is signed
 * with the new key, and a URL signed with a key outside the ring is refused.
 */
describe('upload URLs across a key rotation', () => {
  const oldKey = Buffer.from(TEST_ENCRYPTION_KEY, 'base64');
  const newKey = randomBytes(32);
  let blobDir: string;
  let h: ApiHarness;
  const local = (uploadUrl: string) => {
    const url = new URL(uploadUrl);
    return `${h.api.url}${url.pathname}${url.search}`;
  };
  const slot = async () => {
    const response = await h.request('POST', '/api/v1/outbox/attachments', {
      body: { filename: 'report.pdf', content_type: 'application/pdf', size_bytes: 5 },
    });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return response.body.data as { attachment_id: string; upload_url: string; required_headers: Record<string, string> };
  };
  const claimOf = (created: { attachment_id: string; upload_url: string }) => ({
    attachmentId: created.attachment_id,
    contentType: 'application/pdf',
    sizeBytes: 5,
    expires: Number(new URL(created.upload_url).searchParams.get('expires')),
  });
  const put = (url: string, headers: Record<string, string>) => fetch(local(url), { method: 'PUT', headers, body: 'hello' });

  beforeAll(async () => {
    blobDir = await mkdtemp(join(tmpdir(), 'herald-rotation-'));
    h = await startApiHarness({
      BLOB_DIR: blobDir,
      HERALD_ENCRYPTION_KEY: newKey.toString('base64'),
      HERALD_ENCRYPTION_KEYS_PREVIOUS: TEST_ENCRYPTION_KEY,
    });
  });
  afterAll(async () => {
    await h?.close();
    if (blobDir) await rm(blobDir, { recursive: true, force: true });
  });

  it('signs new URLs with the new key', async () => {
    const created = await slot();
    const claim = claimOf(created);
    expect(created.upload_url).toBe(createUploadUrlSigner(newKey, 'http://herald.test').url(claim));
    expect(created.upload_url).not.toBe(createUploadUrlSigner(oldKey, 'http://herald.test').url(claim));
    const response = await put(created.upload_url, created.required_headers);
    expect(response.status, await response.text()).toBe(200);
  });

  it('still accepts a URL signed under the old key', async () => {
    const created = await slot();
    const old = createUploadUrlSigner(oldKey, 'http://herald.test').url(claimOf(created));
    const response = await put(old, created.required_headers);
    expect(response.status, await response.text()).toBe(200);
  });

  it('refuses a URL signed with a key outside the ring', async () => {
    const created = await slot();
    const forged = createUploadUrlSigner(randomBytes(32), 'http://herald.test').url(claimOf(created));
    const response = await put(forged, created.required_headers);
    const refused: ApiResponse = {
      status: response.status,
      headers: response.headers,
      body: (await response.json()) as ApiResponse['body'],
    };
    expectError(refused, 403, 'forbidden');
    expect(refused.body.error?.details?.reason).toBe('INVALID_SIGNATURE');
  });
});
