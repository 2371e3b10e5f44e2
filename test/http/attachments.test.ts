import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AttachmentUpload } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { createFsBlobStore, readBlob } from '../../src/blob/blob-store.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { startApi } from '../../src/main-api.ts';
import { MAX_ATTACHMENT_BYTES } from '../../src/modules/attachments/attachments.fns.ts';
import { createAttachmentsService } from '../../src/modules/attachments/attachments.service.ts';
import { createUploadUrlSigner } from '../../src/modules/attachments/upload-url.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { expectError, type ApiResponse } from '../support/http.ts';
import { TEST_ENCRYPTION_KEY } from '../support/stack.ts';

interface UploadSlot {
  attachment_id: string;
  upload_url: string;
  expires_at: string;
  required_headers: Record<string, string>;
}

type Field = { path: string; type: string; location: string; message: string };
const fieldsOf = (response: ApiResponse) => (response.body.error?.details as { fields: Field[] }).fields;
const reasonOf = (response: ApiResponse) => response.body.error?.details?.reason;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Every file under a directory (relative paths, sorted). */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort();
}

describe('attachment uploads', () => {
  let h: ApiHarness;
  let blobDir: string;

  beforeAll(async () => {
    blobDir = await mkdtemp(join(tmpdir(), 'herald-uploads-'));
    h = await startApiHarness({ BLOB_DIR: blobDir });
  });
  afterAll(async () => {
    await h.close();
    await rm(blobDir, { recursive: true, force: true });
  });

  const create = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    h.request('POST', '/api/v1/outbox/attachments', { body, headers });

  async function slot(body: Partial<{ filename: string; content_type: string; size_bytes: number }>): Promise<UploadSlot> {
    const response = await create({ filename: 'report.pdf', content_type: 'application/pdf', size_bytes: 10, ...body });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return response.body.data as UploadSlot;
  }

  /** The upload URL aimed at the running api (PUBLIC_URL in tests is http://herald.test). */
  const local = (uploadUrl: string) => {
    const url = new URL(uploadUrl);
    return `${h.api.url}${url.pathname}${url.search}`;
  };

  async function put(url: string, body: RequestInit['body'] | undefined, headers: Record<string, string>, method = 'PUT'): Promise<ApiResponse> {
    const response = await fetch(local(url), { method, headers, ...(body !== undefined ? { body, duplex: 'half' } : {}) });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: JSON.parse(text) as ApiResponse['body'] };
  }

  const row = (id: string) => scopeToOrg(h.stack.orm.em, h.workspace.org.id).findOneOrFail(AttachmentUpload, { id });
  const blobsOf = async (id: string) => (await filesUnder(blobDir)).filter((path) => path.includes(id));

  describe('POST /api/v1/outbox/attachments', () => {
    it('returns 201 with an attachment id, a signed PUT URL, its expiry and the headers to send', async () => {
      const before = Date.now();
      const response = await create({ filename: 'Q3 report.pdf', content_type: 'application/pdf', size_bytes: 48_213 });
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      const data = response.body.data as UploadSlot;
      expect(Object.keys(data).sort()).toEqual(['attachment_id', 'expires_at', 'required_headers', 'upload_url']);
      expect(data.attachment_id).toMatch(/^[0-9a-f]{24}$/);
      expect(data.upload_url).toMatch(new RegExp(`^http://herald\\.test/uploads/${data.attachment_id}\\?expires=\\d+&sig=[0-9a-f]{64}$`));
      const expires = Number(new URL(data.upload_url).searchParams.get('expires'));
      expect(new Date(data.expires_at).getTime()).toBe(expires * 1000);
      expect(expires * 1000 - before).toBeGreaterThan(59 * 60_000);
      expect(expires * 1000 - before).toBeLessThanOrEqual(60 * 60_000);
      expect(data.required_headers).toEqual({ 'Content-Type': 'application/pdf', 'Content-Length': '48213' });

      const stored = await row(data.attachment_id);
      expect(stored).toMatchObject({ orgId: h.workspace.org.id, filename: 'Q3 report.pdf', contentType: 'application/pdf', sizeBytes: 48_213, status: 'pending', sha256: null, uploadedAt: null, referencedAt: null });
    });

    it('accepts a declared size of exactly 12 MB and 1 byte', async () => {
      expect((await slot({ size_bytes: MAX_ATTACHMENT_BYTES })).required_headers['Content-Length']).toBe('12582912');
      expect((await slot({ size_bytes: 1 })).required_headers['Content-Length']).toBe('1');
    });

    it('returns 413 payload_too_large (ATTACHMENT_TOO_LARGE) for a declared size of 12 MB + 1 byte', async () => {
      for (const size of [MAX_ATTACHMENT_BYTES + 1, 25 * 1024 * 1024, 2 ** 53]) {
        const response = await create({ filename: 'big.bin', content_type: 'application/octet-stream', size_bytes: size });
        expectError(response, 413, 'payload_too_large');
        expect(reasonOf(response)).toBe('ATTACHMENT_TOO_LARGE');
        expect(fieldsOf(response)).toEqual([expect.objectContaining({ path: 'size_bytes', location: 'body' })]);
      }
    });

    it.each([
      ['zero', 0],
      ['negative', -5],
      ['fractional', 10.5],
      ['a string', '10'],
      ['null', null],
    ])('returns 400 invalid_request when size_bytes is %s', async (_name, size) => {
      const response = await create({ filename: 'a.pdf', content_type: 'application/pdf', size_bytes: size });
      expectError(response, 400, 'invalid_request');
      expect(fieldsOf(response).map((f) => f.path)).toEqual(['size_bytes']);
    });

    it('returns 400 invalid_request for a missing field, a wrong type or an unknown field', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ content_type: 'application/pdf', size_bytes: 1 }, 'filename'],
        [{ filename: 'a.pdf', size_bytes: 1 }, 'content_type'],
        [{ filename: 'a.pdf', content_type: 'application/pdf' }, 'size_bytes'],
        [{ filename: 7, content_type: 'application/pdf', size_bytes: 1 }, 'filename'],
        [{ filename: 'a.pdf', content_type: 'application/pdf', size_bytes: 1, content: 'aGk=' }, 'content'],
      ];
      for (const [body, path] of cases) {
        const response = await create(body);
        expectError(response, 400, 'invalid_request');
        expect(fieldsOf(response).map((f) => f.path), JSON.stringify(body)).toEqual([path]);
      }
    });

    it('accepts a file name of 512 characters and ordinary names and types', async () => {
      await slot({ filename: `${'n'.repeat(508)}.pdf` });
      await slot({ filename: 'Résumé (final) — 2026.docx', content_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' });
      await slot({ filename: 'notes.txt', content_type: 'text/plain; charset=utf-8' });
      await slot({ filename: 'archive.zip', content_type: 'application/zip' });
      await slot({ filename: 'data.json', content_type: 'application/json' });
      await slot({ filename: 'README', content_type: 'text/plain' });
    });

    it.each([
      ['empty', ''],
      ['513 characters', `${'n'.repeat(509)}.pdf`],
      ['blank', '   '],
      ['dots only', '..'],
      ['a path', 'reports/q3.pdf'],
      ['a Windows path', 'C:\\temp\\q3.pdf'],
      ['a line break', 'q3\r\nX-Injected: 1.pdf'],
      ['an .exe', 'setup.exe'],
      ['an .EXE in capitals', 'SETUP.EXE'],
      ['a double extension ending in .exe', 'invoice.pdf.exe'],
      ['trailing dots and spaces after .exe', 'invoice.exe. .'],
      ['a .js', 'run.js'],
      ['a .bat', 'go.bat'],
      ['a .scr', 'screensaver.scr'],
      ['a .ps1', 'script.ps1'],
      ['a .jar', 'app.jar'],
      ['a .msi', 'install.msi'],
      ['a .vbs', 'macro.vbs'],
      ['an .iso', 'disk.iso'],
    ])('returns 400 INVALID_ATTACHMENT for a file name that is %s', async (_name, filename) => {
      const response = await create({ filename, content_type: 'application/octet-stream', size_bytes: 10 });
      expectError(response, 400, 'invalid_request');
      expect(reasonOf(response)).toBe('INVALID_ATTACHMENT');
      expect(fieldsOf(response).map((f) => f.path)).toEqual(['filename']);
    });

    it.each([
      'application/x-msdownload',
      'application/x-msdos-program',
      'application/vnd.microsoft.portable-executable',
      'application/x-executable',
      'application/x-sh',
      'application/java-archive',
      'text/javascript',
      'application/javascript; charset=utf-8',
      'Application/X-MSDownload',
    ])('returns 400 INVALID_ATTACHMENT for the refused content type %s', async (contentType) => {
      const response = await create({ filename: 'file.bin', content_type: contentType, size_bytes: 10 });
      expectError(response, 400, 'invalid_request');
      expect(reasonOf(response)).toBe('INVALID_ATTACHMENT');
      expect(fieldsOf(response)).toEqual([expect.objectContaining({ path: 'content_type', type: 'denied_content_type' })]);
    });

    it.each(['', 'pdf', 'application/', '/pdf', 'application/pdf; charset', 'text/plain\r\nX-Injected: 1', 'text /plain', `application/${'x'.repeat(250)}`])(
      'returns 400 INVALID_ATTACHMENT for a content type that is not a MIME type: %j',
      async (contentType) => {
        const response = await create({ filename: 'file.bin', content_type: contentType, size_bytes: 10 });
        expectError(response, 400, 'invalid_request');
        expect(reasonOf(response)).toBe('INVALID_ATTACHMENT');
        expect(fieldsOf(response)).toEqual([expect.objectContaining({ path: 'content_type', type: 'mime_type' })]);
      },
    );

    it('returns 400 invalid_request for a NUL character in the file name', async () => {
      const response = await create({ filename: 'q3\u0000.pdf', content_type: 'application/pdf', size_bytes: 10 });
      expectError(response, 400, 'invalid_request');
      expect(fieldsOf(response).map((f) => f.path)).toEqual(['filename']);
    });

    it('reports a bad file name and a bad content type together', async () => {
      const response = await create({ filename: 'x.exe', content_type: 'application/x-sh', size_bytes: 10 });
      expect(fieldsOf(response).map((f) => f.path)).toEqual(['filename', 'content_type']);
    });

    it('works without an Idempotency-Key and replays the same response for the same key', async () => {
      const body = { filename: 'a.pdf', content_type: 'application/pdf', size_bytes: 5 };
      const headers = idem();
      const first = await create(body, headers);
      const second = await create(body, headers);
      expect(first.status).toBe(201);
      expect(second.status).toBe(201);
      expect(second.headers.get('idempotent-replayed')).toBe('true');
      expect(second.body.data).toEqual(first.body.data);
      expectError(await create({ ...body, size_bytes: 6 }, headers), 409, 'idempotency_conflict');
    });

    it('answers 503 service_unavailable when the server has no encryption key to sign with', async () => {
      const service = createAttachmentsService({ orm: h.stack.orm, blobs: createFsBlobStore(blobDir), encryptionKey: undefined, publicUrl: 'http://herald.test' });
      await expect(service.createUpload(h.workspace.org.id, { filename: 'a.pdf', content_type: 'application/pdf', size_bytes: 1 })).rejects.toMatchObject({
        code: 'service_unavailable',
        details: { reason: 'ENCRYPTION_UNAVAILABLE' },
      });
    });
  });

  describe('PUT /uploads/:id', () => {
    it('stores the bytes byte for byte and marks the upload uploaded, whatever the content type (even JSON)', async () => {
      const bytes = Buffer.from(JSON.stringify({ invoice: 42, lines: Array.from({ length: 500 }, (_, i) => ({ i })) }));
      const created = await slot({ filename: 'invoice.json', content_type: 'application/json', size_bytes: bytes.length });
      const response = await put(created.upload_url, bytes, created.required_headers);
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

      const stored = await row(created.attachment_id);
      expect(stored).toMatchObject({ status: 'uploaded', sha256: sha256(bytes) });
      expect(stored.uploadedAt).toBeInstanceOf(Date);
      expect((await readBlob(createFsBlobStore(blobDir), stored.blobKey)).equals(bytes)).toBe(true);
      expect(await blobsOf(created.attachment_id)).toEqual([stored.blobKey]);
    });

    it('streams a file of exactly 12 MB', async () => {
      const bytes = randomBytes(MAX_ATTACHMENT_BYTES);
      const created = await slot({ filename: 'large.bin', content_type: 'application/octet-stream', size_bytes: bytes.length });
      const response = await put(created.upload_url, bytes, created.required_headers);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      const stored = await row(created.attachment_id);
      expect(stored.sha256).toBe(sha256(bytes));
      expect((await readBlob(createFsBlobStore(blobDir), stored.blobKey)).equals(bytes)).toBe(true);
    });

    it('returns 409 conflict for a second PUT after success and keeps the first bytes', async () => {
      const created = await slot({ size_bytes: 4 });
      expect((await put(created.upload_url, 'one!', created.required_headers)).status).toBe(200);
      const second = await put(created.upload_url, 'two!', created.required_headers);
      expectError(second, 409, 'conflict');
      expect(reasonOf(second)).toBe('ALREADY_UPLOADED');
      const stored = await row(created.attachment_id);
      expect((await readBlob(createFsBlobStore(blobDir), stored.blobKey)).toString()).toBe('one!');
      expect(await blobsOf(created.attachment_id)).toEqual([stored.blobKey]);
    });

    it('lets exactly one of two concurrent PUTs win, and keeps the winner\'s bytes only', async () => {
      const size = 256 * 1024;
      const created = await slot({ size_bytes: size });
      const bodies = [randomBytes(size), randomBytes(size)];
      const responses = await Promise.all(bodies.map((body) => put(created.upload_url, body, created.required_headers)));
      expect(responses.map((r) => r.status).sort()).toEqual([200, 409]);
      const winner = responses.findIndex((r) => r.status === 200);
      const stored = await row(created.attachment_id);
      expect(stored.sha256).toBe(sha256(bodies[winner]!));
      expect((await readBlob(createFsBlobStore(blobDir), stored.blobKey)).equals(bodies[winner]!)).toBe(true);
      expect(await blobsOf(created.attachment_id)).toEqual([stored.blobKey]);
    });

    it('returns 400 and stores nothing when Content-Type is not exactly the signed one', async () => {
      const created = await slot({ size_bytes: 5 });
      for (const contentType of ['application/octet-stream', 'application/pdf; charset=utf-8', 'Application/PDF']) {
        const response = await put(created.upload_url, 'hello', { 'Content-Type': contentType });
        expectError(response, 400, 'invalid_request');
        expect(reasonOf(response)).toBe('CONTENT_TYPE_MISMATCH');
      }
      expectError(await put(created.upload_url, Buffer.from('hello'), {}), 400, 'invalid_request');
      expect(await blobsOf(created.attachment_id)).toEqual([]);
      expect((await row(created.attachment_id)).status).toBe('pending');
      expect((await put(created.upload_url, 'hello', created.required_headers)).status).toBe(200);
    });

    it('returns 400 and stores nothing when the body is longer or shorter than the signed length', async () => {
      const created = await slot({ size_bytes: 5 });
      for (const body of ['hell', 'hello!', '']) {
        const response = await put(created.upload_url, body, { 'Content-Type': 'application/pdf' });
        expectError(response, 400, 'invalid_request');
        expect(reasonOf(response), JSON.stringify(body)).toBe('CONTENT_LENGTH_MISMATCH');
      }
      expect(await blobsOf(created.attachment_id)).toEqual([]);
      expect((await row(created.attachment_id)).status).toBe('pending');
    });

    it('returns 400 CONTENT_LENGTH_REQUIRED for a chunked body', async () => {
      const created = await slot({ size_bytes: 5 });
      const stream = new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('hello'));
          controller.close();
        },
      });
      const response = await put(created.upload_url, stream, { 'Content-Type': 'application/pdf' });
      expectError(response, 400, 'invalid_request');
      expect(reasonOf(response)).toBe('CONTENT_LENGTH_REQUIRED');
      expect(await blobsOf(created.attachment_id)).toEqual([]);
    });

    it('stores nothing, and logs no server error, when the client disconnects before sending every declared byte', async () => {
      const lines: string[] = [];
      const api = await startApi(h.stack.config, createLogger('debug', {}, (line) => lines.push(line)));
      try {
        const created = await slot({ size_bytes: 100_000 });
        const target = new URL(new URL(created.upload_url).pathname + new URL(created.upload_url).search, api.url);
        await new Promise<void>((resolve) => {
          const request = httpRequest(target, { method: 'PUT', headers: created.required_headers });
          request.on('close', () => resolve());
          request.on('error', () => {});
          request.write(Buffer.alloc(40_000, 7), () => setTimeout(() => request.destroy(), 100));
        });
        const logged = await waitFor('the aborted upload to be logged', () => {
          const entries = lines.map((line) => JSON.parse(line) as { msg: string; path?: string; status?: number; level: string });
          return Promise.resolve(entries.find((entry) => entry.msg === 'request' && entry.path === `/uploads/${created.attachment_id}`));
        }, 10_000, 20);
        expect(logged.status).toBe(400);
        expect(lines.filter((line) => line.includes('"level":"error"'))).toEqual([]);
        expect(lines.join('\n')).not.toContain(new URL(created.upload_url).searchParams.get('sig'));
        expect(await blobsOf(created.attachment_id)).toEqual([]);
        expect((await row(created.attachment_id)).status).toBe('pending');

        const bytes = randomBytes(100_000);
        const retry = await put(created.upload_url, bytes, created.required_headers);
        expect(retry.status, JSON.stringify(retry.body)).toBe(200);
        const stored = await row(created.attachment_id);
        expect(stored.sha256).toBe(sha256(bytes));
        expect(await blobsOf(created.attachment_id)).toEqual([stored.blobKey]);
      } finally {
        await api.close();
      }
    });

    it('returns 403 INVALID_SIGNATURE for a tampered, missing or foreign signature, and stores nothing', async () => {
      const created = await slot({ size_bytes: 5 });
      const url = new URL(created.upload_url);
      const sig = url.searchParams.get('sig')!;
      const other = await slot({ size_bytes: 5 });
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
        const response = await put(variant, 'hello', created.required_headers);
        expectError(response, 403, 'forbidden');
        expect(reasonOf(response), variant).toBe('INVALID_SIGNATURE');
      }
      expect(await blobsOf(created.attachment_id)).toEqual([]);
      expect(await blobsOf(other.attachment_id)).toEqual([]);
    });

    it('returns 403 UPLOAD_URL_EXPIRED for a correctly signed URL past its expiry', async () => {
      const created = await slot({ size_bytes: 5 });
      const signer = createUploadUrlSigner(Buffer.from(TEST_ENCRYPTION_KEY, 'base64'), 'http://herald.test');
      const claim = { attachmentId: created.attachment_id, contentType: 'application/pdf', sizeBytes: 5 };
      expect(signer.url({ ...claim, expires: Number(new URL(created.upload_url).searchParams.get('expires')) })).toBe(created.upload_url);
      const expired = signer.url({ ...claim, expires: Math.floor(Date.now() / 1000) - 1 });
      const response = await put(expired, 'hello', created.required_headers);
      expectError(response, 403, 'forbidden');
      expect(reasonOf(response)).toBe('UPLOAD_URL_EXPIRED');
      expect(await blobsOf(created.attachment_id)).toEqual([]);
    });

    it('answers other methods with 405 method_not_allowed and Allow: PUT', async () => {
      const created = await slot({ size_bytes: 5 });
      for (const method of ['GET', 'POST', 'DELETE']) {
        const response = await put(created.upload_url, method === 'GET' ? undefined : 'hello', created.required_headers, method);
        expectError(response, 405, 'method_not_allowed');
        expect(response.headers.get('allow')).toBe('PUT');
      }
    });
  });
});

describe('attachment uploads without blob storage (BLOB_DIR empty)', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startApiHarness({ BLOB_DIR: '' });
  });
  afterAll(() => h.close());

  it('POST /api/v1/outbox/attachments returns 503 service_unavailable and records nothing', async () => {
    const response = await h.request('POST', '/api/v1/outbox/attachments', { body: { filename: 'a.pdf', content_type: 'application/pdf', size_bytes: 10 } });
    expectError(response, 503, 'service_unavailable');
    expect(response.body.error?.details?.reason).toBe('ATTACHMENT_STORAGE_UNAVAILABLE');
    expect(await scopeToOrg(h.stack.orm.em, h.workspace.org.id).count(AttachmentUpload, {})).toBe(0);
  });

  it('PUT /uploads/:id returns 503 service_unavailable', async () => {
    const response = await fetch(`${h.api.url}/uploads/0123456789abcdef01234567?expires=1&sig=00`, {
      method: 'PUT',
      headers: { 'content-type': 'application/pdf' },
      body: 'hello',
    });
    expect(response.status).toBe(503);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('service_unavailable');
  });
});
