import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact, ContactImport } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { IMPORT_LIMITS } from '../../src/modules/contacts/contact-import.fns.ts';
import { startWorker, type RunningWorker } from '../../src/worker.ts';
import { startApiHarness, idem, type ApiHarness } from '../support/api.ts';
import { filesUnder } from '../support/uploads.ts';
import { apiClient } from '../support/http.ts';
import { createApiKeysService } from '../../src/modules/auth/api-keys.service.ts';

interface ImportView {
  _id: string;
  status: string;
  total_rows: number | null;
  rows_processed: number;
  created: number;
  updated: number;
  unchanged: number;
  skipped: number;
  failure: { reason: string; message: string; line: number | null } | null;
  upload_url?: string;
  errors_url: string;
}

/**
 * CSV import of contacts end to end: POST /contacts/imports, the signed PUT of the file, the
 * import workflow in a real worker (validate, then batches), the counts and the error report.
 */
describe('contact import (API → upload → Temporal workflow → contacts)', () => {
  let h: ApiHarness;
  let worker: RunningWorker;
  let blobDir: string;

  beforeAll(async () => {
    blobDir = await mkdtemp(join(tmpdir(), 'herald-imports-'));
    h = await startApiHarness({ BLOB_DIR: blobDir });
    worker = await startWorker(h.stack.config, createLogger('silent'), { orm: h.stack.orm });
  }, 120_000);

  afterAll(async () => {
    await worker?.shutdown();
    await h?.close();
    await rm(blobDir, { recursive: true, force: true });
  });

  const local = (uploadUrl: string) => {
    const url = new URL(uploadUrl);
    return `${h.api.url}${url.pathname}${url.search}`;
  };

  async function create(filename = 'contacts.csv'): Promise<ImportView> {
    const response = await h.request('POST', '/api/v1/contacts/imports', { body: { filename }, headers: idem() });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    expect(response.body.data).toMatchObject({
      status: 'awaiting_upload',
      filename,
      size_bytes: null,
      total_rows: null,
      failure: null,
      rows_processed: 0,
    });
    return response.body.data as ImportView;
  }

  async function upload(created: ImportView, body: string | Buffer, headers: Record<string, string> = { 'content-type': 'text/csv' }) {
    const response = await fetch(local(created.upload_url!), { method: 'PUT', headers, body });
    return {
      status: response.status,
      body: (await response.json()) as { ok: boolean; data?: ImportView; error?: { code: string; details?: { reason?: string } } },
    };
  }

  async function settled(id: string): Promise<ImportView> {
    return waitFor(
      `import ${id} to finish`,
      async () => {
        const response = await h.request('GET', `/api/v1/contacts/imports/${id}`);
        const view = response.body.data as ImportView;
        return view.status === 'completed' || view.status === 'failed' ? view : undefined;
      },
      90_000,
      100,
    );
  }

  async function importFile(body: string | Buffer): Promise<ImportView> {
    const created = await create();
    const put = await upload(created, body);
    expect(put.status, JSON.stringify(put.body)).toBe(202);
    expect(put.body.data?.status).toBe('validating');
    return settled(created._id);
  }

  async function report(id: string): Promise<Record<string, string>[]> {
    const response = await fetch(`${h.api.url}/api/v1/contacts/imports/${id}/errors`, {
      headers: { authorization: `Bearer ${h.workspace.key}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    return parse<Record<string, string>>(await response.text(), { columns: true });
  }

  const contacts = () => scopeToOrg(h.stack.orm.em.fork(), h.workspace.org.id);

  it('imports rows, merges duplicates by email, skips bad rows and reports each with its line', async () => {
    await contacts().insert(Contact, {
      id: 'c'.repeat(24),
      orgId: h.workspace.org.id,
      email: 'kept@example.com',
      firstName: 'Kept',
      lastName: 'Stored',
      company: '',
      tags: ['old'],
      customFields: { plan: 'free' },
      status: 'unsubscribed',
      createdAt: new Date(),
      updatedAt: new Date(),
    });
    const csv = [
      '\uFEFFEmail,First Name,last_name,tags,status,Plan',
      'ada@example.com,Ada,Lovelace,"vip;beta",,pro',
      'not-an-address,Bad,Row,,,',
      '',
      'kept@example.com,,NewLast,new,active,team',
      'ada@Example.COM,Augusta,,gamma,unsubscribed,',
      '"multi@example.com","Line',
      'Two",X,,,',
      'short@example.com,Only',
      'bob@example.com,Bob,,,paused,',
    ].join('\r\n');
    const done = await importFile(csv);
    expect(done).toMatchObject({ status: 'completed', total_rows: 7, rows_processed: 7, skipped: 3, failure: null });
    // ada (merged from two rows) and multi are new; kept is updated.
    expect(done.created).toBe(2);
    expect(done.updated).toBe(1);

    const ada = await contacts().findOneOrFail(Contact, { email: 'ada@example.com' });
    expect(ada).toMatchObject({
      firstName: 'Augusta',
      lastName: 'Lovelace',
      tags: ['vip', 'beta', 'gamma'],
      customFields: { Plan: 'pro' },
      status: 'unsubscribed',
    });
    const kept = await contacts().findOneOrFail(Contact, { email: 'kept@example.com' });
    // Empty cells keep stored values, tags and custom fields are added, and an import never re-activates.
    expect(kept).toMatchObject({
      firstName: 'Kept',
      lastName: 'NewLast',
      tags: ['old', 'new'],
      customFields: { plan: 'free', Plan: 'team' },
      status: 'unsubscribed',
    });
    const multi = await contacts().findOneOrFail(Contact, { email: 'multi@example.com' });
    expect(multi.firstName).toBe('Line\r\nTwo');

    expect(await report(done._id)).toEqual([
      { row: '2', line: '3', email: 'not-an-address', reason: 'INVALID_EMAIL', message: 'The email is not a valid address.' },
      { row: '6', line: '9', email: 'short@example.com', reason: 'COLUMN_COUNT', message: 'The row has 2 fields; the header has 6.' },
      {
        row: '7',
        line: '10',
        email: 'bob@example.com',
        reason: 'INVALID_STATUS',
        message: 'status must be one of active, unsubscribed, bounced, complained, suppressed.',
      },
    ]);
    // The file is dropped once imported.
    expect((await filesUnder(blobDir)).filter((path) => path.includes(done._id))).toEqual([]);
  }, 120_000);

  it('imports the same file twice without changing anything the second time', async () => {
    const csv = 'email,first_name,tags\nsame1@example.com,One,a\nsame2@example.com,Two,"[""b"",""c""]"\n';
    const first = await importFile(csv);
    expect(first).toMatchObject({ status: 'completed', created: 2, updated: 0, unchanged: 0 });
    const second = await importFile(csv);
    expect(second).toMatchObject({ status: 'completed', created: 0, updated: 0, unchanged: 2 });
    expect((await contacts().findOneOrFail(Contact, { email: 'same2@example.com' })).tags).toEqual(['b', 'c']);
  }, 120_000);

  it('imports the file of GET /contacts/export back as it is: every contact unchanged', async () => {
    const exported = await fetch(`${h.api.url}/api/v1/contacts/export`, { headers: { authorization: `Bearer ${h.workspace.key}` } });
    expect(exported.status).toBe(200);
    const csv = await exported.text();
    const count = await contacts().count(Contact);
    expect(count).toBeGreaterThan(3);
    const done = await importFile(csv);
    expect(done).toMatchObject({ status: 'completed', total_rows: count, created: 0, updated: 0, unchanged: count, skipped: 0 });
  }, 120_000);

  it.each([
    ['a file that is not UTF-8', Buffer.from('email,first_name\nzoe@example.com,Zo\xe9\n', 'latin1'), 'INVALID_ENCODING', 2],
    ['a header without an email column', 'name,company\nZoe,Acme\n', 'MISSING_EMAIL_COLUMN', 1],
    ['an empty file', '', 'EMPTY_FILE', null],
    ['a column given twice', 'email,E-mail\na@example.com,b@example.com\n', 'DUPLICATE_COLUMN', 1],
    ['an unclosed quote', 'email,first_name\nok@example.com,Ok\n"broken@example.com,Never closed\n', 'MALFORMED_CSV', null],
    ['a 10 MB line', `email,first_name\nfine@example.com,Fine\nhuge@example.com,${'x'.repeat(10 * 1024 * 1024)}\n`, 'RECORD_TOO_LARGE', 3],
  ])(
    'refuses %s whole, importing nothing',
    async (_name, body, reason, line) => {
      const before = await contacts().count(Contact);
      const done = await importFile(body);
      expect(done.status).toBe('failed');
      expect(done.failure?.reason).toBe(reason);
      if (line !== null) expect(done.failure?.line).toBe(line);
      expect(done.failure?.message.length).toBeGreaterThan(10);
      expect(done.rows_processed).toBe(0);
      expect(await contacts().count(Contact)).toBe(before);
    },
    120_000,
  );

  it('refuses a second upload, a forged or lapsed URL, and a multipart body', async () => {
    const created = await create();
    const forged = created.upload_url!.replace(/sig=[0-9a-f]{4}/, 'sig=0000');
    const bad = await fetch(local(forged), { method: 'PUT', body: 'email\n' });
    expect(bad.status).toBe(403);
    expect(((await bad.json()) as { error: { details: { reason: string } } }).error.details.reason).toBe('INVALID_SIGNATURE');

    const multipart = await upload(created, '--x\r\n', { 'content-type': 'multipart/form-data; boundary=x' });
    expect(multipart.status).toBe(400);
    expect(multipart.body.error?.details?.reason).toBe('UNSUPPORTED_CONTENT_TYPE');

    // Over the size limit by its declared length: refused before a byte is stored.
    const huge = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const target = new URL(local(created.upload_url!));
      const req = request(
        target,
        { method: 'PUT', headers: { 'content-type': 'text/csv', 'content-length': String(IMPORT_LIMITS.maxBytes + 1) } },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => {
            resolve({ status: res.statusCode ?? 0, body: text });
            req.destroy();
          });
        },
      );
      req.on('error', reject);
      req.write('email\n');
    });
    expect(huge.status).toBe(413);
    expect(JSON.parse(huge.body)).toMatchObject({
      error: { details: { reason: 'REQUEST_TOO_LARGE', limit_bytes: IMPORT_LIMITS.maxBytes } },
    });

    expect((await upload(created, 'email\nonce@example.com\n')).status).toBe(202);
    const again = await upload(created, 'email\ntwice@example.com\n');
    expect(again.status).toBe(409);
    expect(again.body.error?.details?.reason).toBe('ALREADY_UPLOADED');
    await settled(created._id);

    const lapsing = await create();
    await contacts().nativeUpdate(ContactImport, { id: lapsing._id }, { uploadExpiresAt: new Date(Date.now() - 1000) });
    const shown = await h.request('GET', `/api/v1/contacts/imports/${lapsing._id}`);
    expect(shown.body.data).toMatchObject({ status: 'failed', failure: { reason: 'UPLOAD_EXPIRED' } });
  }, 120_000);

  it('adds every imported contact to a static segment given as segment_id, and checks that segment first', async () => {
    const segment = await h.request('POST', '/api/v1/segments', { body: { name: 'Imported list', type: 'static' }, headers: idem() });
    expect(segment.status, JSON.stringify(segment.body)).toBe(201);
    const segmentId = (segment.body.data as { _id: string })._id;
    const csv = 'email,first_name\nseg1@example.com,One\nseg2@example.com,Two\nnot-an-address,Bad\n';
    const created = await h.request('POST', '/api/v1/contacts/imports', { body: { segment_id: segmentId }, headers: idem() });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const put = await upload(created.body.data as ImportView, csv);
    expect(put.status).toBe(202);
    const done = await settled((created.body.data as ImportView)._id);
    expect(done).toMatchObject({ status: 'completed', created: 2, skipped: 1, segment_id: segmentId, added_to_segment: 2 });
    const members = await h.request('GET', `/api/v1/segments/${segmentId}/contacts`);
    expect((members.body.data as { email: string }[]).map((c) => c.email).sort()).toEqual(['seg1@example.com', 'seg2@example.com']);

    // Again: the contacts are unchanged and already members.
    const again = await h.request('POST', '/api/v1/contacts/imports', { body: { segment_id: segmentId }, headers: idem() });
    expect((await upload(again.body.data as ImportView, csv)).status).toBe(202);
    expect(await settled((again.body.data as ImportView)._id)).toMatchObject({ status: 'completed', unchanged: 2, added_to_segment: 0 });

    const tagged = await h.request('POST', '/api/v1/segments', { body: { name: 'By tag', tags: ['vip'] }, headers: idem() });
    const notStatic = await h.request('POST', '/api/v1/contacts/imports', {
      body: { segment_id: (tagged.body.data as { _id: string })._id },
      headers: idem(),
    });
    expect(notStatic.status).toBe(409);
    expect(notStatic.body.error?.details?.reason).toBe('SEGMENT_NOT_STATIC');
    const unknown = await h.request('POST', '/api/v1/contacts/imports', { body: { segment_id: 'e'.repeat(24) }, headers: idem() });
    expect(unknown.status).toBe(404);

    const { key } = await createApiKeysService({ orm: h.stack.orm }).createApiKey({
      orgId: h.workspace.org.id,
      scopes: ['contacts:write', 'contacts:read'],
      name: 'contacts only',
    });
    const narrow = await apiClient(h.api.url, key)('POST', '/api/v1/contacts/imports', {
      body: { segment_id: segmentId },
      headers: idem(),
    });
    expect(narrow.status).toBe(403);
    expect(narrow.body.error).toMatchObject({ code: 'missing_scope', details: { required_scope: 'segments:write' } });
  }, 120_000);

  it('takes a filename of 255 characters and refuses 256', async () => {
    expect((await h.request('POST', '/api/v1/contacts/imports', { body: { filename: 'f'.repeat(255) }, headers: idem() })).status).toBe(
      201,
    );
    const long = await h.request('POST', '/api/v1/contacts/imports', { body: { filename: 'f'.repeat(256) }, headers: idem() });
    expect(long.status).toBe(400);
    expect(long.body.error?.details?.fields).toEqual([expect.objectContaining({ path: 'filename' })]);
  });

  it('lists imports newest first and keeps them to their workspace', async () => {
    const created = await create('listed.csv');
    const list = await h.request('GET', '/api/v1/contacts/imports?limit=2');
    expect(list.status).toBe(200);
    expect((list.body.data as ImportView[])[0]?._id).toBe(created._id);
    const missing = await h.request('GET', `/api/v1/contacts/imports/${'f'.repeat(24)}`);
    expect(missing.status).toBe(404);
  });
});
