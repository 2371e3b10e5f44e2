import { createHash, randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBlob } from '../../src/blob/blob-store.ts';
import { createFsBlobStore } from '../../src/blob/fs-blob-store.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { startApi } from '../../src/main-api.ts';
import { MAX_ATTACHMENT_BYTES } from '../../src/modules/attachments/attachments.fns.ts';
import { createUploadUrlSigner } from '../../src/modules/attachments/upload-url.ts';
import { expectError, type ApiResponse } from '../support/http.ts';
import { TEST_ENCRYPTION_KEY } from '../support/stack.ts';
import { startUploadHarness, type UploadHarness } from '../support/uploads.ts';

const reasonOf = (response: ApiResponse) => response.body.error?.details?.reason;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('PUT /uploads/:id', () => {
  let h: UploadHarness;
  beforeAll(async () => {
    h = await startUploadHarness();
  });
  afterAll(() => h.close());

  const bytesAt = (key: string) => readBlob(createFsBlobStore(h.blobDir), key);

  it('stores the bytes byte for byte and marks the upload uploaded, whatever the content type (even JSON)', async () => {
    const bytes = Buffer.from(JSON.stringify({ invoice: 42, lines: Array.from({ length: 500 }, (_, i) => ({ i })) }));
    const created = await h.slot({ filename: 'invoice.json', content_type: 'application/json', size_bytes: bytes.length });
    const response = await h.put(created.upload_url, bytes, created.required_headers);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body.ok).toBe(true);
    expect(response.body.meta?.request_id).toEqual(expect.any(String));
    expect(response.body.data).toEqual({
      attachment_id: created.attachment_id,
      filename: 'invoice.json',
      content_type: 'application/json',
      size_bytes: bytes.length,
      sha256: sha256(bytes),
      status: 'uploaded',
      uploaded_at: expect.any(String),
    });

    const stored = await h.row(created.attachment_id);
    expect(stored).toMatchObject({ status: 'uploaded', sha256: sha256(bytes) });
    expect(stored.uploadedAt).toBeInstanceOf(Date);
    expect((await bytesAt(stored.blobKey)).equals(bytes)).toBe(true);
    expect(await h.blobsOf(created.attachment_id)).toEqual([stored.blobKey]);
  });

  it('streams a file of exactly 12 MB', async () => {
    const bytes = randomBytes(MAX_ATTACHMENT_BYTES);
    const created = await h.slot({ filename: 'large.bin', content_type: 'application/octet-stream', size_bytes: bytes.length });
    const response = await h.put(created.upload_url, bytes, created.required_headers);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const stored = await h.row(created.attachment_id);
    expect(stored.sha256).toBe(sha256(bytes));
    expect((await bytesAt(stored.blobKey)).equals(bytes)).toBe(true);
  });

  it('returns 409 conflict for a second PUT after success and keeps the first bytes', async () => {
    const created = await h.slot({ size_bytes: 4 });
    expect((await h.put(created.upload_url, 'one!', created.required_headers)).status).toBe(200);
    const second = await h.put(created.upload_url, 'two!', created.required_headers);
    expectError(second, 409, 'conflict');
    expect(reasonOf(second)).toBe('ALREADY_UPLOADED');
    const stored = await h.row(created.attachment_id);
    expect((await bytesAt(stored.blobKey)).toString()).toBe('one!');
    expect(await h.blobsOf(created.attachment_id)).toEqual([stored.blobKey]);
  });

  it("lets exactly one of two concurrent PUTs win, and keeps the winner's bytes only", async () => {
    const size = 256 * 1024;
    const created = await h.slot({ size_bytes: size });
    const bodies = [randomBytes(size), randomBytes(size)];
    const responses = await Promise.all(bodies.map((body) => h.put(created.upload_url, body, created.required_headers)));
    expect(responses.map((r) => r.status).sort()).toEqual([200, 409]);
    const winner = responses.findIndex((r) => r.status === 200);
    const stored = await h.row(created.attachment_id);
    expect(stored.sha256).toBe(sha256(bodies[winner]!));
    expect((await bytesAt(stored.blobKey)).equals(bodies[winner]!)).toBe(true);
    expect(await h.blobsOf(created.attachment_id)).toEqual([stored.blobKey]);
  });

  it('returns 400 and stores nothing when Content-Type is not exactly the signed one', async () => {
    const created = await h.slot({ size_bytes: 5 });
    for (const contentType of ['application/octet-stream', 'application/pdf; charset=utf-8', 'Application/PDF']) {
      const response = await h.put(created.upload_url, 'hello', { 'Content-Type': contentType });
      expectError(response, 400, 'invalid_request');
      expect(reasonOf(response)).toBe('CONTENT_TYPE_MISMATCH');
    }
    expectError(await h.put(created.upload_url, Buffer.from('hello'), {}), 400, 'invalid_request');
    expect(await h.blobsOf(created.attachment_id)).toEqual([]);
    expect((await h.row(created.attachment_id)).status).toBe('pending');
    expect((await h.put(created.upload_url, 'hello', created.required_headers)).status).toBe(200);
  });

  it('returns 400 and stores nothing when the body is longer or shorter than the signed length', async () => {
    const created = await h.slot({ size_bytes: 5 });
    for (const body of ['hell', 'hello!', '']) {
      const response = await h.put(created.upload_url, body, { 'Content-Type': 'application/pdf' });
      expectError(response, 400, 'invalid_request');
      expect(reasonOf(response), JSON.stringify(body)).toBe('CONTENT_LENGTH_MISMATCH');
    }
    expect(await h.blobsOf(created.attachment_id)).toEqual([]);
    expect((await h.row(created.attachment_id)).status).toBe('pending');
  });

  it('returns 400 CONTENT_LENGTH_REQUIRED for a chunked body', async () => {
    const created = await h.slot({ size_bytes: 5 });
    const stream = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('hello'));
        controller.close();
      },
    });
    const response = await h.put(created.upload_url, stream, { 'Content-Type': 'application/pdf' });
    expectError(response, 400, 'invalid_request');
    expect(reasonOf(response)).toBe('CONTENT_LENGTH_REQUIRED');
    expect(await h.blobsOf(created.attachment_id)).toEqual([]);
  });

  it('stores nothing, and logs no server error, when the client disconnects before sending every declared byte', async () => {
    const lines: string[] = [];
    const api = await startApi(
      h.stack.config,
      createLogger('debug', {}, (line) => lines.push(line)),
    );
    try {
      const created = await h.slot({ size_bytes: 100_000 });
      const target = new URL(new URL(created.upload_url).pathname + new URL(created.upload_url).search, api.url);
      await new Promise<void>((resolve) => {
        const request = httpRequest(target, { method: 'PUT', headers: created.required_headers });
        request.on('close', () => resolve());
        request.on('error', () => {});
        request.write(Buffer.alloc(40_000, 7), () => setTimeout(() => request.destroy(), 100));
      });
      const logged = await waitFor(
        'the aborted upload to be logged',
        () => {
          const entries = lines.map((line) => JSON.parse(line) as { msg: string; path?: string; status?: number; level: string });
          return Promise.resolve(entries.find((entry) => entry.msg === 'request' && entry.path === `/uploads/${created.attachment_id}`));
        },
        10_000,
        20,
      );
      expect(logged.status).toBe(400);
      expect(lines.filter((line) => line.includes('"level":"error"'))).toEqual([]);
      expect(lines.join('\n')).not.toContain(new URL(created.upload_url).searchParams.get('sig'));
      expect(await h.blobsOf(created.attachment_id)).toEqual([]);
      expect((await h.row(created.attachment_id)).status).toBe('pending');

      const bytes = randomBytes(100_000);
      const retry = await h.put(created.upload_url, bytes, created.required_headers);
      expect(retry.status, JSON.stringify(retry.body)).toBe(200);
      const stored = await h.row(created.attachment_id);
      expect(stored.sha256).toBe(sha256(bytes));
      expect(await h.blobsOf(created.attachment_id)).toEqual([stored.blobKey]);
    } finally {
      await api.close();
    }
  });

  it('returns 403 INVALID_SIGNATURE for a tampered, missing or foreign signature, and stores nothing', async () => {
    const created = await h.slot({ size_bytes: 5 });
    const url = new URL(created.upload_url);
    const sig = url.searchParams.get('sig')!;
    const other = await h.slot({ size_bytes: 5 });
    const variants = [
      created.upload_url.replace(sig, `${sig.slice(0, -1)}${sig.endsWith('0') ? '1' : '0'}`),
      created.upload_url.replace(/expires=(\d+)/, (_m, e: string) => `expires=${Number(e) + 60}`),
      created.upload_url.replace(/&sig=.*/, ''),
      created.upload_url.replace(sig, sig.toUpperCase() === sig ? sig.toLowerCase() : sig.toUpperCase()),
      created.upload_url.replace(created.attachment_id, other.attachment_id),
      created.upload_url.replace(created.attachment_id, '0123456789abcdef01234567'),
      created.upload_url.replace(created.attachment_id, 'not-an-id'),
      created.upload_url.replace(/expires=\d+/, 'expires=soon'),
    ];
    for (const variant of variants) {
      const response = await h.put(variant, 'hello', created.required_headers);
      expectError(response, 403, 'forbidden');
      expect(reasonOf(response), variant).toBe('INVALID_SIGNATURE');
    }
    expect(await h.blobsOf(created.attachment_id)).toEqual([]);
    expect(await h.blobsOf(other.attachment_id)).toEqual([]);
  });

  it('returns 403 UPLOAD_URL_EXPIRED for a correctly signed URL past its expiry', async () => {
    const created = await h.slot({ size_bytes: 5 });
    const signer = createUploadUrlSigner(Buffer.from(TEST_ENCRYPTION_KEY, 'base64'), 'http://herald.test');
    const claim = { attachmentId: created.attachment_id, contentType: 'application/pdf', sizeBytes: 5 };
    expect(signer.url({ ...claim, expires: Number(new URL(created.upload_url).searchParams.get('expires')) })).toBe(created.upload_url);
    const expired = signer.url({ ...claim, expires: Math.floor(Date.now() / 1000) - 1 });
    const response = await h.put(expired, 'hello', created.required_headers);
    expectError(response, 403, 'forbidden');
    expect(reasonOf(response)).toBe('UPLOAD_URL_EXPIRED');
    expect(await h.blobsOf(created.attachment_id)).toEqual([]);
  });

  it('answers other methods with 405 method_not_allowed and Allow: PUT', async () => {
    const created = await h.slot({ size_bytes: 5 });
    for (const method of ['GET', 'POST', 'DELETE']) {
      const response = await h.put(created.upload_url, method === 'GET' ? undefined : 'hello', created.required_headers, method);
      expectError(response, 405, 'method_not_allowed');
      expect(response.headers.get('allow')).toBe('PUT');
    }
  });
});
