import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InboxMessage } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import type { BlobStore } from '../../src/blob/blob-store.ts';
import { createBlobStore } from '../../src/blob/open-blob-store.ts';
import { contentDisposition } from '../../src/modules/inbox/inbox.fns.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { dashboardClient, decodeEntities, signedInPerson } from '../support/dashboard-client.ts';
import { createOrg, unique } from '../support/factories.ts';
import { insertAttachment, insertMessage, insertThread } from '../support/inbox-rows.ts';

/** Text as the browser reads it from an attribute or element (ghtml escapes with numeric references). */

/** A page's text without the break opportunities (`<wbr>`) long runs get. */
const plain = (text: string) => text.replaceAll('<wbr>', '');

describe("the dashboard's inbox pages", () => {
  let h: ApiHarness;
  let blobDir: string;
  let blobs: BlobStore;
  const email = () => `${unique('person').toLowerCase()}@example.com`;

  /** A fresh workspace and a person signed in to it, so a list holds exactly what the test put there. */
  async function freshWorkspace() {
    const { org } = await createOrg(h.stack.orm);
    const { client } = await signedInPerson(h.stack.orm, h.api.url, org.id, { email: email() });
    return { orgId: org.id, client };
  }

  /** The raw bytes of a download, with the client's cookies. */
  async function download(client: ReturnType<typeof dashboardClient>, path: string) {
    const cookie = [...client.jar].map(([name, value]) => `${name}=${value}`).join('; ');
    const response = await fetch(`${h.api.url}${path}`, { redirect: 'manual', headers: cookie ? { cookie } : {} });
    return { response, bytes: Buffer.from(await response.arrayBuffer()) };
  }

  beforeAll(async () => {
    blobDir = await mkdtemp(join(tmpdir(), 'herald-dashboard-inbox-'));
    h = await startApiHarness({ BLOB_DIR: blobDir });
    blobs = (await createBlobStore(h.stack.config))!;
  });
  afterAll(async () => {
    await h.close();
    await rm(blobDir, { recursive: true, force: true });
  });

  it('answers no page and no download without a session (303 to sign-in)', async () => {
    const message = await insertMessage(h.stack.orm, h.workspace.org.id);
    const attachment = await insertAttachment(h.stack.orm, h.workspace.org.id, { messageId: message.id, blobs });
    const client = dashboardClient(h.api.url);
    for (const path of [
      '/dashboard/inbox',
      `/dashboard/inbox/threads/${message.threadId}`,
      `/dashboard/inbox/messages/${message.id}/attachments/${attachment.id}`,
    ]) {
      const page = await client.get(path);
      expect(page.status, path).toBe(303);
      expect(page.headers.get('location'), path).toBe('/dashboard/sign-in');
      expect(page.text, path).not.toContain('attachment bytes');
    }
    expect((await client.post(`/dashboard/inbox/threads/${message.threadId}/read`, { _csrf: 'x', read: 'true' })).status).toBe(303);
    expect((await scopeToOrg(h.stack.orm.em, h.workspace.org.id).findOneOrFail(InboxMessage, { id: message.id })).readAt).toBeNull();
  });

  it("lists threads most recent first with subject, participants and an unread marker; not another workspace's", async () => {
    const { orgId, client } = await freshWorkspace();
    const now = Date.now();
    const older = await insertThread(h.stack.orm, orgId, {
      subject: 'Invoice question',
      participants: ['bob@example.com', 'billing@inbox.example.com'],
      lastMessageAt: new Date(now - 3_600_000),
    });
    await insertMessage(h.stack.orm, orgId, { threadId: older.id, readAt: new Date() });
    const newer = await insertThread(h.stack.orm, orgId, {
      subject: 'Where is my order?',
      participants: ['carol@example.com'],
      lastMessageAt: new Date(now - 60_000),
    });
    await insertMessage(h.stack.orm, orgId, {
      threadId: newer.id,
      fromEmail: 'carol@example.com',
      fromName: 'Carol',
      text: 'It has been a week.',
    });
    const foreign = await insertThread(h.stack.orm, h.workspace.org.id, { subject: 'Foreign thread subject' });

    const response = await client.get('/dashboard/inbox');
    expect(response.status).toBe(200);
    const page = { text: plain(response.text) };
    expect(page.text).toContain('aria-current="page">Inbox');
    expect(page.text).toContain('<th scope="col">Subject</th>');
    const first = page.text.indexOf(`/dashboard/inbox/threads/${newer.id}`);
    const second = page.text.indexOf(`/dashboard/inbox/threads/${older.id}`);
    expect(first).toBeGreaterThan(0);
    expect(second).toBeGreaterThan(first);
    expect(page.text).toContain('Where is my order?');
    expect(page.text).toContain('bob@example.com, billing@inbox.example.com');
    expect(page.text).toContain('It has been a week.');
    // One unread marker: the newer thread's message is unread, the older one's is read.
    expect(page.text.match(/class="state unread">1 unread</g)).toHaveLength(1);
    expect(page.text.indexOf('1 unread')).toBeLessThan(second);
    expect(page.text).not.toContain(foreign.subject);
  });

  it('pages threads with an "Older" link (keyset at full precision)', async () => {
    const { orgId, client } = await freshWorkspace();
    const base = Date.now() - 86_400_000;
    const threads = [];
    for (let i = 0; i < 51; i += 1)
      threads.push(await insertThread(h.stack.orm, orgId, { subject: `Thread ${i}`, lastMessageAt: new Date(base + i * 1000) }));
    const first = await client.get('/dashboard/inbox');
    expect(first.text).toContain(threads[50]!.id);
    expect(first.text).not.toContain(threads[0]!.id);
    const next = /href="([^"]+)" rel="next">Older conversations/.exec(first.text)?.[1];
    expect(next).toBeDefined();
    const second = await client.get(decodeEntities(next!));
    expect(second.status).toBe(200);
    expect(second.text).toContain(threads[0]!.id);
    expect(second.text).not.toContain(threads[1]!.id);
    expect(second.text).not.toContain('rel="next"');
  });

  it("shows a thread's messages oldest first: from, to, date, text body", async () => {
    const { orgId, client } = await freshWorkspace();
    const thread = await insertThread(h.stack.orm, orgId, {
      subject: 'Refund',
      participants: ['dave@example.com', 'support@inbox.example.com'],
      messageCount: 2,
    });
    await insertMessage(h.stack.orm, orgId, {
      threadId: thread.id,
      subject: 'Refund',
      fromEmail: 'dave@example.com',
      fromName: 'Dave',
      to: [{ email: 'support@inbox.example.com', name: 'Support' }],
      text: 'First line\nsecond line\n\nA new paragraph.',
      createdAt: new Date(Date.now() - 120_000),
    });
    await insertMessage(h.stack.orm, orgId, {
      threadId: thread.id,
      direction: 'outbound',
      subject: 'Re: Refund',
      fromEmail: 'support@inbox.example.com',
      fromName: 'Support',
      to: [{ email: 'dave@example.com', name: '' }],
      text: 'Refunded today: https://shop.example.com/orders/123456789/refunds/987654321',
      readAt: new Date(),
      createdAt: new Date(Date.now() - 60_000),
    });
    const response = await client.get(`/dashboard/inbox/threads/${thread.id}`);
    expect(response.status).toBe(200);
    const page = { text: plain(response.text) };
    expect(page.text).toContain('<h1>Refund</h1>');
    expect(page.text).toContain('From Dave &#60;dave@example.com&#62;');
    expect(page.text).toContain('Support &#60;support@inbox.example.com&#62;');
    expect(page.text).toContain('<p>First line<br>second line</p><p>A new paragraph.</p>');
    expect(page.text).toContain('Refunded today: https://shop.example.com/orders/123456789/refunds/987654321');
    // A long run gets break opportunities, so it wraps on a phone.
    expect(response.text).toContain('https:<wbr>/<wbr>/<wbr>shop.<wbr>example.<wbr>com/<wbr>orders/');
    expect(page.text).toContain('Re: Refund');
    expect(page.text).toMatch(/<dt>Date<\/dt><dd><time datetime="/);
    expect(page.text.indexOf('First line')).toBeLessThan(page.text.indexOf('Refunded today:'));
  });

  it("shows an HTML body only inside a sandboxed iframe's srcdoc, escaped, never live in the page", async () => {
    const { orgId, client } = await freshWorkspace();
    const hostile =
      '<p onclick="steal()">Hi</p><script>alert("inbox")</script><img src="https://tracker.example/pixel.gif"><iframe src="https://evil.example"></iframe>"\'&amp;';
    const message = await insertMessage(h.stack.orm, orgId, {
      subject: '<script>alert("subject")</script>',
      fromName: '<img src=x onerror=alert(1)>',
      text: '<script>alert("text")</script>',
      html: hostile,
    });
    const page = await client.get(`/dashboard/inbox/threads/${message.threadId}`);
    expect(page.status).toBe(200);
    expect(page.text).not.toContain('<script>alert');
    expect(page.text).not.toContain('<img src');
    expect(page.text).not.toContain('onclick="steal()"');
    expect(page.text).not.toContain('<iframe src');
    expect(page.text).not.toContain('tracker.example/pixel.gif"');
    const iframes = page.text.match(/<iframe[^>]*>/g) ?? [];
    expect(iframes).toHaveLength(1);
    const iframe = iframes[0]!;
    expect(iframe).toMatch(/ sandbox /);
    expect(iframe).not.toMatch(/allow-/);
    const srcdoc = /srcdoc="([^"]*)"/.exec(iframe)?.[1];
    expect(srcdoc).toBeDefined();
    expect(srcdoc).not.toMatch(/[<>"]/);
    expect(decodeEntities(srcdoc!)).toBe(hostile);
    // The page's own policy still holds (no inline script may run, and the frame inherits it).
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
  });

  it('lists attachments with download links that return the bytes as an attachment', async () => {
    const { orgId, client } = await freshWorkspace();
    const message = await insertMessage(h.stack.orm, orgId, { attachmentCount: 2 });
    const bytes = Buffer.concat([Buffer.from([0x00, 0xff, 0xfe, 0x0d, 0x0a]), Buffer.alloc(100_000, 0x41)]);
    const attachment = await insertAttachment(h.stack.orm, orgId, {
      messageId: message.id,
      blobs,
      bytes,
      filename: 'report <1>.pdf',
      contentType: 'application/pdf',
    });
    await insertAttachment(h.stack.orm, orgId, { messageId: message.id, status: 'failed', filename: 'lost.zip', position: 1 });
    const page = await client.get(`/dashboard/inbox/threads/${message.threadId}`);
    const href = `/dashboard/inbox/messages/${message.id}/attachments/${attachment.id}`;
    expect(page.text).toContain(`<a href="${href}" download>report &#60;1&#62;.pdf</a>`);
    expect(page.text).toContain('application/pdf, 97.7 KB');
    expect(page.text).not.toContain('lost.zip</a>');

    const { response, bytes: received } = await download(client, href);
    expect(response.status).toBe(200);
    expect(received.equals(bytes)).toBe(true);
    expect(response.headers.get('content-type')).toBe('application/octet-stream');
    expect(response.headers.get('content-length')).toBe(String(bytes.length));
    // The API's header for the stored name (ASCII fallback and RFC 5987 form).
    expect(response.headers.get('content-disposition')).toBe(contentDisposition('report <1>.pdf'));
    expect(response.headers.get('content-disposition')).toMatch(/^attachment; /);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('cache-control')).toBe('private, no-store');
  });

  it("keeps workspaces apart: another workspace's thread or attachment is 404", async () => {
    const { client } = await freshWorkspace();
    const message = await insertMessage(h.stack.orm, h.workspace.org.id, { subject: 'Not yours' });
    const attachment = await insertAttachment(h.stack.orm, h.workspace.org.id, {
      messageId: message.id,
      blobs,
      bytes: Buffer.from('secret bytes'),
    });
    expect((await client.get(`/dashboard/inbox/threads/${message.threadId}`)).status).toBe(404);
    expect((await client.get('/dashboard/inbox/threads/nope')).status).toBe(404);
    const foreign = await download(client, `/dashboard/inbox/messages/${message.id}/attachments/${attachment.id}`);
    expect(foreign.response.status).toBe(404);
    expect(foreign.bytes.toString()).not.toContain('secret bytes');
    expect((await client.submit('/dashboard/inbox', `/dashboard/inbox/threads/${message.threadId}/read`, { read: 'true' })).status).toBe(
      404,
    );
    expect((await scopeToOrg(h.stack.orm.em, h.workspace.org.id).findOneOrFail(InboxMessage, { id: message.id })).readAt).toBeNull();
  });

  it('answers 404 for an attachment named under another message of the workspace', async () => {
    const { orgId, client } = await freshWorkspace();
    const one = await insertMessage(h.stack.orm, orgId);
    const other = await insertMessage(h.stack.orm, orgId);
    const attachment = await insertAttachment(h.stack.orm, orgId, { messageId: one.id, blobs });
    expect((await download(client, `/dashboard/inbox/messages/${other.id}/attachments/${attachment.id}`)).response.status).toBe(404);
  });

  it('marks a thread read and unread (CSRF token required)', async () => {
    const { orgId, client } = await freshWorkspace();
    const message = await insertMessage(h.stack.orm, orgId);
    const path = `/dashboard/inbox/threads/${message.threadId}`;
    const readAt = async () => (await scopeToOrg(h.stack.orm.em, orgId).findOneOrFail(InboxMessage, { id: message.id })).readAt;
    expect((await client.post(`${path}/read`, { read: 'true' })).status).toBe(403);
    expect(await readAt()).toBeNull();
    const page = await client.get(path);
    expect(page.text).toContain('Mark as read');
    const marked = await client.submit(path, `${path}/read`, { read: 'true' });
    expect(marked.status).toBe(303);
    expect(await readAt()).not.toBeNull();
    const after = await client.get(marked.headers.get('location')!);
    expect(after.text).toContain('Marked as read.');
    expect(after.text).toContain('Mark as unread');
    expect(after.text).not.toContain('class="state unread"');
    expect((await client.submit(path, `${path}/read`, { read: 'false' })).status).toBe(303);
    expect(await readAt()).toBeNull();
  });
});
