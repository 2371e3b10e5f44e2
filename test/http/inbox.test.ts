import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TransactionalEmail } from '../../db/entities/index.ts';
import { newId } from '../../db/ids.ts';
import { scopeToOrg } from '../../db/orm.ts';
import type { BlobStore } from '../../src/blob/blob-store.ts';
import { createBlobStore } from '../../src/blob/open-blob-store.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient, expectError, fieldsOf, type ApiResponse } from '../support/http.ts';
import { insertAttachment, insertMessage, insertThread, setUpdatedAt } from '../support/inbox-rows.ts';

interface MessageRecord {
  id: string;
  thread_id: string;
  direction: string;
  updated_at: string;
  attachments: { id: string; filename: string; content_type: string; size_bytes: number }[];
  [field: string]: unknown;
}

const pageOf = (response: ApiResponse) =>
  (response.body.meta as { pagination: { limit: number; has_more: boolean; next_cursor: string | null } }).pagination;
const ids = (response: ApiResponse) => {
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return (response.body.data as { id: string }[]).map((item) => item.id);
};

describe('inbox read API', () => {
  let h: ApiHarness;
  let blobDir: string;
  let blobs: BlobStore;

  beforeAll(async () => {
    blobDir = await mkdtemp(join(tmpdir(), 'herald-inbox-'));
    h = await startApiHarness({ BLOB_DIR: blobDir });
    blobs = (await createBlobStore(h.stack.config))!;
  });
  afterAll(async () => {
    await h.close();
    await rm(blobDir, { recursive: true, force: true });
  });

  /** A fresh workspace, so a list holds exactly what the test put there. */
  const workspace = async () => {
    const ws = await createOrgWithKey(h.stack.orm, { scopes: ['all'], rateLimitPerMinute: 100_000, burst: 10_000 });
    return { ...ws, request: apiClient(h.api.url, ws.key) };
  };

  /** Every message of a list walked page by page with `limit`; `between` runs after each page. */
  async function walk(
    request: ReturnType<typeof apiClient>,
    query: string,
    limit: number,
    between: () => Promise<void> = async () => {},
    cursor: string | null = null,
  ): Promise<{ items: MessageRecord[]; cursor: string | null }> {
    const items: MessageRecord[] = [];
    let last = cursor;
    for (let pages = 0; pages < 100; pages += 1) {
      const response = await request('GET', `/api/v1/inbox/messages?limit=${limit}${query}${last ? `&cursor=${last}` : ''}`);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      const data = response.body.data as MessageRecord[];
      items.push(...data);
      if (data.length === 0) return { items, cursor: last };
      last = pageOf(response).next_cursor ?? last;
      await between();
    }
    throw new Error('the walk did not end');
  }

  describe('GET /api/v1/inbox/messages', () => {
    it('lists messages in the spec shape with stored attachments only', async () => {
      const ws = await workspace();
      const message = await insertMessage(h.stack.orm, ws.org.id, {
        subject: 'Invoice',
        text: 'Please find attached',
        cc: [{ email: 'bob@example.com', name: 'Bob' }],
        references: ['<a@x>', '<b@x>'],
        inReplyTo: '<b@x>',
        attachmentIngestStatus: 'partial_failure',
        failedAttachments: [{ filename: 'broken.zip', reason: 'ingest_failed' }],
        attachmentCount: 2,
        authResults: { spf: 'pass', dkim: 'pass', dmarc: 'pass' },
      });
      const stored = await insertAttachment(h.stack.orm, ws.org.id, {
        messageId: message.id,
        blobs,
        filename: 'invoice.pdf',
        contentType: 'application/pdf',
        position: 0,
      });
      await insertAttachment(h.stack.orm, ws.org.id, { messageId: message.id, status: 'failed', filename: 'broken.zip', position: 1 });

      const response = await ws.request('GET', '/api/v1/inbox/messages');
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect(response.body.data).toEqual([
        {
          id: message.id,
          thread_id: message.threadId,
          direction: 'inbound',
          subject: 'Invoice',
          text: 'Please find attached',
          from: { email: 'alice@example.com', name: 'Alice' },
          to: [{ email: 'support@inbox.example.com', name: 'Support' }],
          rfc_message_id: message.rfcMessageId,
          in_reply_to_message_id: '<b@x>',
          references_rfc: ['<a@x>', '<b@x>'],
          attachments: [{ id: stored.id, filename: 'invoice.pdf', content_type: 'application/pdf', size_bytes: stored.sizeBytes }],
          attachment_ingest_status: 'partial_failure',
          failed_attachments: [{ filename: 'broken.zip', reason: 'ingest_failed' }],
          attachment_count: 2,
          attachments_ready: true,
          cc: [{ email: 'bob@example.com', name: 'Bob' }],
          kind: 'message',
          auth_results: { spf: 'pass', dkim: 'pass', dmarc: 'pass' },
          email_id: null,
          sent_at: null,
          read: false,
          read_at: null,
          starred: false,
          tags: [],
          created_at: message.createdAt.toISOString(),
          updated_at: message.updatedAt.toISOString(),
        },
      ]);
      expect(pageOf(response)).toMatchObject({ limit: 50, has_more: false, next_cursor: expect.any(String) });
    });

    it('filters by thread_id, direction and updated_after (inclusive)', async () => {
      const ws = await workspace();
      const thread = await insertThread(h.stack.orm, ws.org.id);
      const a = await insertMessage(h.stack.orm, ws.org.id, { threadId: thread.id });
      const b = await insertMessage(h.stack.orm, ws.org.id, {
        threadId: thread.id,
        direction: 'outbound',
        attachmentIngestStatus: 'unavailable',
      });
      const c = await insertMessage(h.stack.orm, ws.org.id);
      await setUpdatedAt(h.stack.orm, a.id, '2026-01-01T00:00:00.000000Z');
      await setUpdatedAt(h.stack.orm, b.id, '2026-01-02T00:00:00.000500Z');
      await setUpdatedAt(h.stack.orm, c.id, '2026-01-03T00:00:00.000000Z');

      expect(ids(await ws.request('GET', `/api/v1/inbox/messages?thread_id=${thread.id}`))).toEqual([a.id, b.id]);
      expect(ids(await ws.request('GET', `/api/v1/inbox/messages?thread_id=${thread.id.toUpperCase()}`))).toEqual([a.id, b.id]);
      expect(ids(await ws.request('GET', `/api/v1/inbox/messages?thread_id=${newId()}`))).toEqual([]);
      expect(ids(await ws.request('GET', '/api/v1/inbox/messages?direction=outbound'))).toEqual([b.id]);
      expect(ids(await ws.request('GET', '/api/v1/inbox/messages?direction=inbound'))).toEqual([a.id, c.id]);
      expect(ids(await ws.request('GET', '/api/v1/inbox/messages?updated_after=2026-01-02T00:00:00.000Z'))).toEqual([b.id, c.id]);
      expect(ids(await ws.request('GET', '/api/v1/inbox/messages?updated_after=2026-01-03T00:00:00Z'))).toEqual([c.id]);
      expect(ids(await ws.request('GET', '/api/v1/inbox/messages?updated_after=2026-01-03T01:00:00%2B02:00'))).toEqual([c.id]);
      expect(ids(await ws.request('GET', '/api/v1/inbox/messages?updated_after=1000-01-01T00:00:00Z'))).toEqual([a.id, b.id, c.id]);
      expect(ids(await ws.request('GET', '/api/v1/inbox/messages?updated_after=2026-01-03T00:00:00.001Z'))).toEqual([]);
    });

    it("scope=mine keeps threads where the key's user takes part or that hold an email sent with the key; team is everything", async () => {
      const ws = await workspace();
      const withUser = await insertThread(h.stack.orm, ws.org.id, { participants: [ws.owner.email.toLowerCase(), 'client@example.com'] });
      const mineByUser = await insertMessage(h.stack.orm, ws.org.id, { threadId: withUser.id });
      const sentThread = await insertThread(h.stack.orm, ws.org.id, { participants: ['noreply@example.com', 'customer@example.com'] });
      const em = scopeToOrg(h.stack.orm.em, ws.org.id);
      const email = em.create(TransactionalEmail, {
        orgId: ws.org.id,
        apiKeyId: ws.apiKey.id,
        domainId: newId(),
        domain: 'example.com',
        fromEmail: 'noreply@example.com',
        subject: 'Your order',
        messageId: `${newId()}.0@example.com`,
        status: 'sent',
        quotaDay: '2026-11-21',
      });
      await em.flush();
      const sent = await insertMessage(h.stack.orm, ws.org.id, {
        threadId: sentThread.id,
        direction: 'outbound',
        emailId: email.id,
        attachmentIngestStatus: 'unavailable',
      });
      const reply = await insertMessage(h.stack.orm, ws.org.id, { threadId: sentThread.id, inReplyToId: sent.id });
      const other = await insertMessage(h.stack.orm, ws.org.id);

      expect(ids(await ws.request('GET', '/api/v1/inbox/messages?scope=mine'))).toEqual([mineByUser.id, sent.id, reply.id]);
      expect(ids(await ws.request('GET', '/api/v1/inbox/messages?scope=team'))).toEqual([mineByUser.id, sent.id, reply.id, other.id]);
      expect(ids(await ws.request('GET', '/api/v1/inbox/messages'))).toEqual([mineByUser.id, sent.id, reply.id, other.id]);

      const { createApiKeysService } = await import('../../src/modules/auth/api-keys.service.ts');
      const second = await createApiKeysService({ orm: h.stack.orm }).createApiKey({
        orgId: ws.org.id,
        scopes: ['all'],
        rateLimitPerMinute: 100_000,
        burst: 10_000,
      });
      expect(ids(await apiClient(h.api.url, second.key)('GET', '/api/v1/inbox/messages?scope=mine'))).toEqual([mineByUser.id]);
    });

    it.each([
      ['thread_id=xyz', 'thread_id'],
      [`thread_id=${'a'.repeat(23)}`, 'thread_id'],
      [`thread_id=${'a'.repeat(25)}`, 'thread_id'],
      ['updated_after=yesterday', 'updated_after'],
      ['updated_after=2026-11-21', 'updated_after'],
      ['updated_after=2026-02-30T00:00:00Z', 'updated_after'],
      ['updated_after=2026-11-21T25:00:00Z', 'updated_after'],
      ['direction=sideways', 'direction'],
      ['direction=INBOUND', 'direction'],
      ['scope=everyone', 'scope'],
      ['scope=', 'scope'],
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=-1', 'limit'],
      ['cursor=not-a-cursor', 'cursor'],
    ])('answers 400 invalid_request for %s', async (query, path) => {
      const response = await h.request('GET', `/api/v1/inbox/messages?${query}`);
      expectError(response, 400, 'invalid_request');
      expect(fieldsOf(response)).toEqual([expect.objectContaining({ path, location: 'query' })]);
    });

    it('accepts limit 1 and 100', async () => {
      for (const limit of [1, 100]) {
        const response = await h.request('GET', `/api/v1/inbox/messages?limit=${limit}`);
        expect(response.status, JSON.stringify(response.body)).toBe(200);
        expect(pageOf(response).limit).toBe(limit);
      }
    });

    it('refuses a cursor of the thread list or of another workspace', async () => {
      const ws = await workspace();
      await insertMessage(h.stack.orm, ws.org.id);
      await insertMessage(h.stack.orm, ws.org.id);
      const threads = await ws.request('GET', '/api/v1/inbox/threads?limit=1');
      const threadCursor = pageOf(threads).next_cursor!;
      expectError(await ws.request('GET', `/api/v1/inbox/messages?cursor=${threadCursor}`), 400, 'invalid_request');
      const messages = await ws.request('GET', '/api/v1/inbox/messages?limit=1');
      expectError(await h.request('GET', `/api/v1/inbox/messages?cursor=${pageOf(messages).next_cursor!}`), 400, 'invalid_request');
    });
  });

  describe('GET /api/v1/inbox/messages (polling)', () => {
    it('orders rows with equal updated_at by id and keeps microseconds apart within one millisecond', async () => {
      const ws = await workspace();
      const rows = [];
      for (let i = 0; i < 7; i += 1) rows.push(await insertMessage(h.stack.orm, ws.org.id));
      // Five share one timestamp; two sit in the same millisecond, a microsecond apart (and
      // before/after the five), so a millisecond cursor would repeat or skip them.
      for (const row of rows.slice(0, 5)) await setUpdatedAt(h.stack.orm, row.id, '2026-05-05T05:05:05.123400Z');
      await setUpdatedAt(h.stack.orm, rows[5]!.id, '2026-05-05T05:05:05.123399Z');
      await setUpdatedAt(h.stack.orm, rows[6]!.id, '2026-05-05T05:05:05.123401Z');
      const expected = [
        rows[5]!.id,
        ...rows
          .slice(0, 5)
          .map((r) => r.id)
          .sort(),
        rows[6]!.id,
      ];

      for (const limit of [1, 2, 3]) {
        const { items } = await walk(ws.request, '', limit);
        expect(
          items.map((m) => m.id),
          `limit ${limit}`,
        ).toEqual(expected);
      }
    });

    it('misses and repeats nothing while messages arrive between pages', async () => {
      const ws = await workspace();
      const initial = [];
      for (let i = 0; i < 6; i += 1) initial.push((await insertMessage(h.stack.orm, ws.org.id)).id);
      const arrived: string[] = [];
      const { items } = await walk(ws.request, '', 2, async () => {
        if (arrived.length < 5) arrived.push((await insertMessage(h.stack.orm, ws.org.id)).id);
      });
      const seen = items.map((m) => m.id);
      expect(new Set(seen).size).toBe(seen.length);
      expect([...seen].sort()).toEqual([...initial, ...arrived].sort());
      const updated = items.map((m) => m.updated_at);
      expect([...updated].sort()).toEqual(updated);
    });

    it('shows a message again after it changed: last cursor plus an overlapping updated_after', async () => {
      const ws = await workspace();
      const pending = await insertMessage(h.stack.orm, ws.org.id, {
        attachmentIngestStatus: 'pending',
        attachmentsReady: false,
        attachmentCount: 1,
      });
      const settled = await insertMessage(h.stack.orm, ws.org.id);
      const first = await walk(ws.request, '', 10);
      expect(first.items.map((m) => m.id)).toEqual([pending.id, settled.id]);
      const newest = first.items.at(-1)!.updated_at;
      expect(first.cursor).not.toBeNull();

      // Nothing new: the last cursor answers an empty page and keeps no cursor of its own.
      const idle = await ws.request('GET', `/api/v1/inbox/messages?cursor=${first.cursor}`);
      expect(idle.body.data).toEqual([]);
      expect(pageOf(idle)).toEqual({ limit: 50, has_more: false, next_cursor: null });

      // Ingestion settles the attachments (updated_at moves), as the pipeline does in SQL.
      await h.stack.orm.em
        .fork()
        .execute(
          "update inbox_messages set attachment_ingest_status = 'ready', attachments_ready = true, updated_at = clock_timestamp() where id = ?",
          [pending.id],
        );
      const overlap = new Date(new Date(newest).getTime() - 60_000).toISOString();
      const again = await walk(ws.request, `&updated_after=${overlap}`, 10, async () => {}, first.cursor);
      expect(again.items.map((m) => [m.id, m.attachments_ready])).toEqual([[pending.id, true]]);
      // Reconciling without the cursor, the overlap shows both again (clients dedupe on id + updated_at).
      const reconcile = await walk(ws.request, `&updated_after=${overlap}`, 10);
      expect(reconcile.items.map((m) => m.id)).toEqual([settled.id, pending.id]);
    });
  });

  describe('GET /api/v1/inbox/messages/{id}', () => {
    it('answers the message with its HTML body and reply correlation', async () => {
      const ws = await workspace();
      const original = await insertMessage(h.stack.orm, ws.org.id, {
        direction: 'outbound',
        subject: 'Quote',
        html: '<p>Quote</p>',
        attachmentIngestStatus: 'unavailable',
      });
      const first = await insertMessage(h.stack.orm, ws.org.id, {
        threadId: original.threadId,
        subject: 'Re: Quote',
        inReplyToId: original.id,
        inReplyTo: original.rfcMessageId,
      });
      const second = await insertMessage(h.stack.orm, ws.org.id, {
        threadId: original.threadId,
        subject: 'Re: Quote',
        inReplyToId: original.id,
      });
      await insertMessage(h.stack.orm, (await workspace()).org.id, { inReplyToId: original.id });

      const response = await ws.request('GET', `/api/v1/inbox/messages/${original.id}`);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      const data = response.body.data as MessageRecord;
      expect(data).toMatchObject({
        id: original.id,
        direction: 'outbound',
        html: '<p>Quote</p>',
        in_reply_to: null,
        attachment_ingest_status: 'unavailable',
      });
      expect(data.replies).toEqual(
        [first, second].map((m) => ({
          id: m.id,
          thread_id: original.threadId,
          direction: 'inbound',
          subject: 'Re: Quote',
          created_at: m.createdAt.toISOString(),
        })),
      );

      const reply = (await ws.request('GET', `/api/v1/inbox/messages/${first.id.toUpperCase()}`)).body.data as MessageRecord;
      expect(reply).toMatchObject({
        id: first.id,
        html: null,
        in_reply_to_message_id: original.rfcMessageId,
        in_reply_to: {
          id: original.id,
          thread_id: original.threadId,
          direction: 'outbound',
          subject: 'Quote',
          created_at: original.createdAt.toISOString(),
        },
        replies: [],
      });
    });

    it('answers 404 not_found for an absent message and 400 for an id that is not 24 hex', async () => {
      expectError(await h.request('GET', `/api/v1/inbox/messages/${newId()}`), 404, 'not_found');
      for (const bad of ['123', 'g'.repeat(24), 'a'.repeat(25)]) {
        const response = await h.request('GET', `/api/v1/inbox/messages/${bad}`);
        expectError(response, 400, 'invalid_request');
        expect(fieldsOf(response)).toEqual([expect.objectContaining({ path: 'id', location: 'path' })]);
      }
    });
  });

  describe('GET /api/v1/inbox/messages/{id}/attachments/{attachmentId}', () => {
    const download = (path: string) =>
      fetch(`${h.api.url}${path}`, { headers: { authorization: `Bearer ${h.workspace.key}` } }).then(async (response) => ({
        response,
        bytes: Buffer.from(await response.arrayBuffer()),
      }));

    it('streams the exact bytes (NUL, non-UTF-8, every byte value) with safe headers', async () => {
      const message = await insertMessage(h.stack.orm, h.workspace.org.id);
      const bytes = Buffer.concat([
        Buffer.from([0x00, 0xff, 0xfe, 0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x82, 0x00, 0x0d, 0x0a]),
        Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
        Buffer.alloc(300_000, 0x5a),
        Buffer.from([0xf0, 0x28, 0x8c, 0x28]),
      ]);
      const attachment = await insertAttachment(h.stack.orm, h.workspace.org.id, {
        messageId: message.id,
        blobs,
        bytes,
        filename: 'report.pdf',
        contentType: 'application/pdf',
      });
      const { response, bytes: received } = await download(`/api/v1/inbox/messages/${message.id}/attachments/${attachment.id}`);
      expect(response.status).toBe(200);
      expect(received.equals(bytes)).toBe(true);
      expect(response.headers.get('content-type')).toBe('application/octet-stream');
      expect(response.headers.get('content-length')).toBe(String(bytes.length));
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('content-disposition')).toBe('attachment; filename="report.pdf"; filename*=UTF-8\'\'report.pdf');
      expect(response.headers.get('cache-control')).toBe('private, no-store');
      expect(response.headers.get('repr-digest')).toBe(`sha-256=:${Buffer.from(attachment.sha256!, 'hex').toString('base64')}:`);
    });

    it('sends an empty attachment as zero bytes', async () => {
      const message = await insertMessage(h.stack.orm, h.workspace.org.id);
      const attachment = await insertAttachment(h.stack.orm, h.workspace.org.id, { messageId: message.id, blobs, bytes: Buffer.alloc(0) });
      const { response, bytes } = await download(`/api/v1/inbox/messages/${message.id}/attachments/${attachment.id}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-length')).toBe('0');
      expect(bytes.length).toBe(0);
    });

    it('keeps a hostile filename out of the header structure', async () => {
      const message = await insertMessage(h.stack.orm, h.workspace.org.id);
      const hostile = 'in"voice\r\nSet-Cookie: a=b; x\\y/../ünïcødé 文件 \u202Efdp.exe 100%.pdf';
      const attachment = await insertAttachment(h.stack.orm, h.workspace.org.id, { messageId: message.id, blobs, filename: hostile });
      const { response } = await download(`/api/v1/inbox/messages/${message.id}/attachments/${attachment.id}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('set-cookie')).toBeNull();
      const header = response.headers.get('content-disposition')!;
      expect(header).toMatch(/^[\x20-\x7e]+$/);
      const match = /^attachment; filename="([^"\\]*)"; filename\*=UTF-8''([A-Za-z0-9%._~#$&+^`|-]+)$/.exec(header);
      expect(match, header).not.toBeNull();
      expect(match![1]).toBe('in_voice__Set-Cookie: a=b_ x_y_.._unic_de __ _fdp.exe 100_.pdf');
      expect(decodeURIComponent(match![2]!)).toBe('in"voice__Set-Cookie: a=b; x_y_.._ünïcødé 文件 _fdp.exe 100%.pdf');
    });

    it('answers 404 for an attachment of another message, a failed one, a missing blob or an absent id', async () => {
      const ws = h.workspace;
      const message = await insertMessage(h.stack.orm, ws.org.id);
      const other = await insertMessage(h.stack.orm, ws.org.id);
      const attachment = await insertAttachment(h.stack.orm, ws.org.id, { messageId: other.id, blobs });
      const failed = await insertAttachment(h.stack.orm, ws.org.id, { messageId: message.id, status: 'failed' });
      const lost = await insertAttachment(h.stack.orm, ws.org.id, { messageId: message.id, blobs, position: 1 });
      await blobs.delete(lost.blobKey!);
      for (const path of [
        `/api/v1/inbox/messages/${message.id}/attachments/${attachment.id}`,
        `/api/v1/inbox/messages/${message.id}/attachments/${failed.id}`,
        `/api/v1/inbox/messages/${message.id}/attachments/${lost.id}`,
        `/api/v1/inbox/messages/${message.id}/attachments/${newId()}`,
        `/api/v1/inbox/messages/${newId()}/attachments/${attachment.id}`,
      ]) {
        expectError(await h.request('GET', path), 404, 'not_found');
      }
      const foreign = await workspace();
      expectError(await foreign.request('GET', `/api/v1/inbox/messages/${other.id}/attachments/${attachment.id}`), 404, 'not_found');
      expect((await h.request('GET', `/api/v1/inbox/messages/${other.id}/attachments/${attachment.id}`)).status).toBe(200);
    });

    it('answers 400 naming each id that is not 24 hex', async () => {
      const response = await h.request('GET', `/api/v1/inbox/messages/nope/attachments/${'z'.repeat(24)}`);
      expectError(response, 400, 'invalid_request');
      expect(
        fieldsOf(response)
          .map((f) => f.path)
          .sort(),
      ).toEqual(['attachmentId', 'id']);
    });
  });

  describe('GET /api/v1/inbox/threads', () => {
    it('lists threads by last message, newest first, with the last message and attachment state', async () => {
      const ws = await workspace();
      const old = await insertThread(h.stack.orm, ws.org.id, { subject: 'Old', lastMessageAt: new Date('2026-01-01T00:00:00Z') });
      const busy = await insertThread(h.stack.orm, ws.org.id, {
        subject: 'Busy',
        lastMessageAt: new Date('2026-03-01T00:00:00Z'),
        messageCount: 2,
      });
      const tie = await insertThread(h.stack.orm, ws.org.id, { subject: 'Tie', lastMessageAt: new Date('2026-01-01T00:00:00Z') });
      const empty = await insertThread(h.stack.orm, ws.org.id, {
        subject: 'Empty',
        lastMessageAt: new Date('2025-12-01T00:00:00Z'),
        messageCount: 0,
      });
      await insertMessage(h.stack.orm, ws.org.id, { threadId: busy.id, text: 'first', createdAt: new Date('2026-02-01T00:00:00Z') });
      const latest = await insertMessage(h.stack.orm, ws.org.id, {
        threadId: busy.id,
        direction: 'outbound',
        fromEmail: 'support@inbox.example.com',
        fromName: '',
        text: `  Thanks!\n\nWe   got it. ${'x'.repeat(300)}`,
        attachmentIngestStatus: 'pending',
        attachmentsReady: false,
        createdAt: new Date('2026-03-01T00:00:00Z'),
      });
      await insertMessage(h.stack.orm, ws.org.id, { threadId: old.id });

      const response = await ws.request('GET', '/api/v1/inbox/threads');
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      const [first, ...rest] = response.body.data as Record<string, unknown>[];
      expect(first).toEqual({
        id: busy.id,
        subject: 'Busy',
        participants: ['alice@example.com', 'support@inbox.example.com'],
        message_count: 2,
        last_message_at: '2026-03-01T00:00:00.000Z',
        attachments_ready: false,
        last_message: {
          id: latest.id,
          direction: 'outbound',
          kind: 'message',
          from: { email: 'support@inbox.example.com', name: '' },
          snippet: `Thanks! We got it. ${'x'.repeat(180)}…`,
          created_at: '2026-03-01T00:00:00.000Z',
        },
        unread_count: 2,
        starred: false,
        archived: false,
        tags: [],
        created_at: busy.createdAt.toISOString(),
        updated_at: busy.updatedAt.toISOString(),
      });
      expect(rest.map((t) => t.id)).toEqual([[old.id, tie.id].sort().reverse(), empty.id].flat());
      expect(rest.find((t) => t.id === empty.id)).toMatchObject({ last_message: null, attachments_ready: true });

      const walked: string[] = [];
      let cursor: string | null = null;
      do {
        const page: ApiResponse = await ws.request('GET', `/api/v1/inbox/threads?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
        walked.push(...ids(page));
        cursor = pageOf(page).next_cursor;
        expect(pageOf(page).has_more).toBe(cursor !== null);
      } while (cursor);
      expect(walked).toEqual(ids(response));
    });

    it('answers 400 for limit 0 and 101 and accepts 1 and 100', async () => {
      for (const limit of [0, 101]) expectError(await h.request('GET', `/api/v1/inbox/threads?limit=${limit}`), 400, 'invalid_request');
      for (const limit of [1, 100]) expect((await h.request('GET', `/api/v1/inbox/threads?limit=${limit}`)).status).toBe(200);
    });
  });
});
