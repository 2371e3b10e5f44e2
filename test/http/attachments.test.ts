import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AttachmentUpload } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { createFsBlobStore } from '../../src/blob/fs-blob-store.ts';
import { MAX_ATTACHMENT_BYTES } from '../../src/modules/attachments/attachments.fns.ts';
import { createAttachmentsService } from '../../src/modules/attachments/attachments.service.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { expectError, fieldsOf, type ApiResponse } from '../support/http.ts';
import { startUploadHarness, type UploadHarness, type UploadSlot } from '../support/uploads.ts';

const reasonOf = (response: ApiResponse) => response.body.error?.details?.reason;

describe('POST /api/v1/outbox/attachments', () => {
  let h: UploadHarness;
  beforeAll(async () => {
    h = await startUploadHarness();
  });
  afterAll(() => h.close());

  it('returns 201 with an attachment id, a signed PUT URL, its expiry and the headers to send', async () => {
    const before = Date.now();
    const response = await h.create({ filename: 'Q3 report.pdf', content_type: 'application/pdf', size_bytes: 48_213 });
    const after = Date.now();
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    const data = response.body.data as UploadSlot;
    expect(Object.keys(data).sort()).toEqual(['attachment_id', 'expires_at', 'required_headers', 'upload_url']);
    expect(data.attachment_id).toMatch(/^[0-9a-f]{24}$/);
    expect(data.upload_url).toMatch(new RegExp(`^http://herald\\.test/uploads/${data.attachment_id}\\?expires=\\d+&sig=[0-9a-f]{64}$`));
    const expires = Number(new URL(data.upload_url).searchParams.get('expires'));
    expect(new Date(data.expires_at).getTime()).toBe(expires * 1000);
    expect(expires).toBeGreaterThanOrEqual(Math.floor(before / 1000) + 3600);
    expect(expires).toBeLessThanOrEqual(Math.floor(after / 1000) + 3600);
    expect(data.required_headers).toEqual({ 'Content-Type': 'application/pdf', 'Content-Length': '48213' });

    const stored = await h.row(data.attachment_id);
    expect(stored).toMatchObject({
      orgId: h.workspace.org.id,
      filename: 'Q3 report.pdf',
      contentType: 'application/pdf',
      sizeBytes: 48_213,
      status: 'pending',
      sha256: null,
      uploadedAt: null,
      referencedAt: null,
    });
  });

  it('accepts a declared size of exactly 12 MB and 1 byte', async () => {
    expect((await h.slot({ size_bytes: MAX_ATTACHMENT_BYTES })).required_headers['Content-Length']).toBe('12582912');
    expect((await h.slot({ size_bytes: 1 })).required_headers['Content-Length']).toBe('1');
  });

  it('returns 413 payload_too_large (ATTACHMENT_TOO_LARGE) for a declared size of 12 MB + 1 byte', async () => {
    for (const size of [MAX_ATTACHMENT_BYTES + 1, 25 * 1024 * 1024, 2 ** 53]) {
      const response = await h.create({ filename: 'big.bin', content_type: 'application/octet-stream', size_bytes: size });
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
    const response = await h.create({ filename: 'a.pdf', content_type: 'application/pdf', size_bytes: size });
    expectError(response, 400, 'invalid_request');
    expect(fieldsOf(response).map((f) => f.path)).toEqual(['size_bytes']);
  });

  it('returns 400 invalid_request for a missing field, a wrong type or an unknown field; INVALID_ATTACHMENT when the file name or type is the problem', async () => {
    const cases: [Record<string, unknown>, string, string | undefined][] = [
      [{ content_type: 'application/pdf', size_bytes: 1 }, 'filename', 'INVALID_ATTACHMENT'],
      [{ filename: 'a.pdf', size_bytes: 1 }, 'content_type', 'INVALID_ATTACHMENT'],
      [{ filename: 'a.pdf', content_type: 'application/pdf' }, 'size_bytes', undefined],
      [{ filename: 7, content_type: 'application/pdf', size_bytes: 1 }, 'filename', 'INVALID_ATTACHMENT'],
      [{ filename: null, content_type: 'application/pdf', size_bytes: 1 }, 'filename', 'INVALID_ATTACHMENT'],
      [{ filename: 'a.pdf', content_type: 'application/pdf', size_bytes: 1, content: 'aGk=' }, 'content', undefined],
    ];
    for (const [body, path, reason] of cases) {
      const response = await h.create(body);
      expectError(response, 400, 'invalid_request');
      expect(
        fieldsOf(response).map((f) => f.path),
        JSON.stringify(body),
      ).toEqual([path]);
      expect((response.body.error?.details as { reason?: string }).reason, JSON.stringify(body)).toBe(reason);
    }
  });

  it('accepts a file name of 512 characters and ordinary names and types', async () => {
    await h.slot({ filename: `${'n'.repeat(508)}.pdf` });
    await h.slot({
      filename: 'Résumé (final) — 2026.docx',
      content_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    });
    await h.slot({ filename: 'notes.txt', content_type: 'text/plain; charset=utf-8' });
    await h.slot({ filename: 'archive.zip', content_type: 'application/zip' });
    await h.slot({ filename: 'data.json', content_type: 'application/json' });
    await h.slot({ filename: 'README', content_type: 'text/plain' });
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
    const response = await h.create({ filename, content_type: 'application/octet-stream', size_bytes: 10 });
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
    const response = await h.create({ filename: 'file.bin', content_type: contentType, size_bytes: 10 });
    expectError(response, 400, 'invalid_request');
    expect(reasonOf(response)).toBe('INVALID_ATTACHMENT');
    expect(fieldsOf(response)).toEqual([expect.objectContaining({ path: 'content_type', type: 'denied_content_type' })]);
  });

  it.each([
    '',
    'pdf',
    'application/',
    '/pdf',
    'application/pdf; charset',
    'text/plain\r\nX-Injected: 1',
    'text /plain',
    `application/${'x'.repeat(250)}`,
  ])('returns 400 INVALID_ATTACHMENT for a content type that is not a MIME type: %j', async (contentType) => {
    const response = await h.create({ filename: 'file.bin', content_type: contentType, size_bytes: 10 });
    expectError(response, 400, 'invalid_request');
    expect(reasonOf(response)).toBe('INVALID_ATTACHMENT');
    expect(fieldsOf(response)).toEqual([expect.objectContaining({ path: 'content_type', type: 'mime_type' })]);
  });

  it('returns 400 invalid_request for a NUL character in the file name', async () => {
    const response = await h.create({ filename: 'q3\u0000.pdf', content_type: 'application/pdf', size_bytes: 10 });
    expectError(response, 400, 'invalid_request');
    expect(fieldsOf(response).map((f) => f.path)).toEqual(['filename']);
  });

  it('reports a bad file name and a bad content type together', async () => {
    const response = await h.create({ filename: 'x.exe', content_type: 'application/x-sh', size_bytes: 10 });
    expect(fieldsOf(response).map((f) => f.path)).toEqual(['filename', 'content_type']);
  });

  it('works without an Idempotency-Key and replays the same response for the same key', async () => {
    const body = { filename: 'a.pdf', content_type: 'application/pdf', size_bytes: 5 };
    const headers = idem();
    const first = await h.create(body, headers);
    const second = await h.create(body, headers);
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body.data).toEqual(first.body.data);
    expectError(await h.create({ ...body, size_bytes: 6 }, headers), 409, 'idempotency_conflict');
  });

  it('answers 503 service_unavailable when the server has no encryption key to sign with', async () => {
    const service = createAttachmentsService({
      orm: h.stack.orm,
      blobs: createFsBlobStore(h.blobDir),
      encryptionKey: undefined,
      publicUrl: 'http://herald.test',
    });
    await expect(
      service.createUpload(h.workspace.org.id, { filename: 'a.pdf', content_type: 'application/pdf', size_bytes: 1 }),
    ).rejects.toMatchObject({
      code: 'service_unavailable',
      details: { reason: 'ENCRYPTION_UNAVAILABLE' },
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
    const response = await h.request('POST', '/api/v1/outbox/attachments', {
      body: { filename: 'a.pdf', content_type: 'application/pdf', size_bytes: 10 },
    });
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
