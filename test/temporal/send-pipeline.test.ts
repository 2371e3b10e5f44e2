import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Contact, EmailEvent, Event, Suppression } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { createFsBlobStore } from '../../src/blob/fs-blob-store.ts';
import { startMailSink, type MailSink } from '../../src/dev/mail-sink.ts';
import { createLogger } from '../../src/logger.ts';
import { dkimDnsValue } from '../../src/modules/domains/dkim.fns.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { expectError, type ApiResponse } from '../support/http.ts';
import { addSendingDomain, creditsOf, setCredits } from '../support/sending.ts';
import { messageProblems } from '../support/message-quality.ts';
import { insertEndpoint } from '../support/webhook-rows.ts';
import type { Domain } from '../../db/entities/index.ts';

type Recipient = { email: string; kind: string; status: string; attempts: number; bounce_type: string | null };
type EmailRecord = { _id: string; message_id: string; status: string; scheduled_at: string | null; recipients: Recipient[] };

const BOUNCE_DOMAIN = 'bounces.herald.test';

describe('transactional send pipeline (API → Temporal → worker → relay)', () => {
  let sink: MailSink;
  let h: ApiHarness;
  let worker: RunningWorker;
  let domain: Domain;
  let orgId: string;
  let blobDir: string;

  const send = async (body: Record<string, unknown>) => h.request('POST', '/api/v1/outbox/emails', { body, headers: idem() });
  const accepted = (response: ApiResponse) => {
    expect(response.status, JSON.stringify(response.body)).toBe(202);
    return response.body.data as EmailRecord;
  };
  const getEmail = async (id: string) => (await h.request('GET', `/api/v1/outbox/emails/${id}`)).body.data as EmailRecord;
  async function until(id: string, done: (email: EmailRecord) => boolean, timeoutMs = 20_000): Promise<EmailRecord> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const email = await getEmail(id);
      if (done(email)) return email;
      if (Date.now() > deadline) throw new Error(`email ${id} never got there: ${JSON.stringify(email)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  const base = (overrides: Record<string, unknown> = {}) => ({
    from: `Shop <shop@${domain.domain}>`,
    subject: 'Hello',
    text: 'Plain body',
    ...overrides,
  });

  beforeAll(async () => {
    sink = await startMailSink({ smtpPort: 0, feedback: null });
    blobDir = await mkdtemp(join(tmpdir(), 'herald-send-'));
    h = await startApiHarness(
      {
        SMTP_RELAY_URL: `smtp://127.0.0.1:${sink.smtpPort}`,
        SMTP_RELAY_FINAL_HOP: 'true',
        BOUNCE_DOMAIN,
        BLOB_DIR: blobDir,
        EMAIL_RETRY_SCHEDULE: '0s,300ms',
        EMAIL_RETRY_WINDOW: '5s',
        SEND_HANDOFF_WAIT_MS: '5000',
      },
      { keyMode: 'live' },
    );
    installTemporalLogging(createLogger('silent'));
    worker = await startWorker(h.stack.config, createLogger('silent'));
    orgId = h.workspace.org.id;
    domain = await addSendingDomain(h.stack.orm, orgId);
    await setCredits(h.stack.orm, orgId, 1000);
    // A subscriber, so the email.* events are written (they are left out when nobody would receive them).
    await insertEndpoint(h.stack.orm, orgId, {
      url: 'http://127.0.0.1:9/hook',
      events: ['email.sent', 'email.delivered', 'email.deferred', 'email.bounced', 'email.failed'],
    });
  }, 120_000);

  afterAll(async () => {
    await worker?.shutdown();
    await h?.close();
    await sink?.close();
    await rm(blobDir, { recursive: true, force: true });
  });

  it('delivers a full message: headers, DKIM, Message-ID, no Bcc, VERP, attachments byte-identical', async () => {
    const binary = Buffer.from(Array.from({ length: 512 }, (_, i) => i % 256));
    const logo = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
    // A stored attachment through the real upload URL.
    const stored = Buffer.from('%PDF-1.4 stored attachment \u0000 bytes');
    const slot = await h.request('POST', '/api/v1/outbox/attachments', {
      body: { filename: 'invoice.pdf', content_type: 'application/pdf', size_bytes: stored.length },
      headers: idem(),
    });
    expect(slot.status, JSON.stringify(slot.body)).toBe(201);
    const upload = slot.body.data as { attachment_id: string; upload_url: string; required_headers: Record<string, string> };
    const url = new URL(upload.upload_url);
    const put = await fetch(`${h.api.url}${url.pathname}${url.search}`, { method: 'PUT', headers: upload.required_headers, body: stored });
    expect(put.status, await put.clone().text()).toBeLessThan(300);

    const response = await send(
      base({
        to: ['Alice@Example.com'],
        cc: ['carol@example.com'],
        bcc: ['secret@example.com'],
        reply_to: 'support@example.com',
        html: '<p>Hi <img src="cid:logo"></p>',
        headers: { 'X-Campaign': 'spring', 'List-Unsubscribe': '<mailto:unsub@example.com>' },
        attachments: [
          { filename: 'data.bin', content: binary.toString('base64'), content_type: 'application/octet-stream' },
          { filename: 'logo.png', content: logo.toString('base64'), content_type: 'image/png', content_id: 'logo' },
          { attachment_id: upload.attachment_id, filename: 'renamed.pdf' },
        ],
      }),
    );
    const email = accepted(response);
    const message = await sink.waitFor((m) => m.messageId === email.message_id, 20_000);
    // The envelope sender is the sending domain's bounces. host (SPF aligns with From; docs/sending.md).
    expect(message.mailFrom).toMatch(new RegExp(`^bounce\\+${email._id}-[0-9a-f]{20}@bounces\\.${domain.domain.replace(/\./g, '\\.')}$`));
    expect(message.rcptTo.sort()).toEqual(['alice@example.com', 'carol@example.com', 'secret@example.com']);
    const raw = message.raw.toString('latin1');
    expect(raw).not.toMatch(/^bcc:/im);
    expect(raw).not.toContain('secret@example.com');

    const parsed = await simpleParser(message.raw);
    expect(parsed.messageId).toBe(`<${email.message_id}>`);
    expect(parsed.subject).toBe('Hello');
    expect(parsed.from?.value[0]).toMatchObject({ address: `shop@${domain.domain}`, name: 'Shop' });
    expect(parsed.headers.get('x-campaign')).toBe('spring');
    expect(parsed.replyTo?.text).toBe('support@example.com');
    const files = new Map(parsed.attachments.map((a) => [a.filename, a]));
    expect(files.get('data.bin')?.content.equals(binary)).toBe(true);
    expect(files.get('logo.png')?.content.equals(logo)).toBe(true);
    expect(files.get('logo.png')?.contentId).toBe('<logo>');
    expect(files.get('renamed.pdf')?.content.equals(stored)).toBe(true);

    const dkimRecord = dkimDnsValue(domain.dkimPublicKey);
    const verified = await dkimVerify(message.raw, {
      resolver: (name: string, type: string) =>
        type === 'TXT' && name === `${domain.dkimSelector}._domainkey.${domain.domain}`
          ? Promise.resolve([[dkimRecord]])
          : Promise.reject(Object.assign(new Error('not found'), { code: 'ENOTFOUND' })),
    });
    expect(verified.results[0]?.status?.result, JSON.stringify(verified.results)).toBe('pass');
    expect(verified.results[0]?.signingDomain).toBe(domain.domain);

    const settled = await until(email._id, (e) => e.status === 'sent');
    expect(settled.recipients.map((r) => r.status)).toEqual(['delivered', 'delivered', 'delivered']);
    const em = scopeToOrg(h.stack.orm.em, orgId);
    expect(await em.count(EmailEvent, { emailId: email._id, type: 'sent' })).toBe(3);
    expect(await em.count(EmailEvent, { emailId: email._id, type: 'delivered' })).toBe(3);
    expect(await em.count(Event, { type: 'email.delivered', data: { email_id: email._id } })).toBe(3);
    // Inline bytes go once the send settled (deleted right after the settling commit, so
    // moments after the status reads `sent`); the stored upload stays for reuse.
    const blobs = createFsBlobStore(blobDir);
    await vi.waitFor(async () => expect(await blobs.exists(`sends/${orgId}/${email._id}/0`)).toBe(false), { timeout: 5_000, interval: 50 });
  });

  it('bounces a 5xx recipient hard: suppressed, contact bounced, the next send refused', async () => {
    const address = 'bounce@simulator.herald.test';
    const em = scopeToOrg(h.stack.orm.em, orgId);
    em.create(Contact, { orgId, email: address });
    await em.flush();
    const email = accepted(await send(base({ to: [address, 'delivered@simulator.herald.test'] })));
    const settled = await until(email._id, (e) => e.status === 'sent');
    expect(settled.recipients.map((r) => [r.email, r.status, r.bounce_type])).toEqual([
      [address, 'bounced', 'hard'],
      ['delivered@simulator.herald.test', 'delivered', null],
    ]);
    const fresh = scopeToOrg(h.stack.orm.em, orgId);
    expect(await fresh.count(Suppression, { email: address, reason: 'hard_bounce' })).toBe(1);
    expect((await fresh.findOneOrFail(Contact, { email: address })).status).toBe('bounced');
    expect(await fresh.count(Event, { type: 'email.bounced', data: { email_id: email._id } })).toBe(1);
    const again = await send(base({ to: address }));
    expectError(again, 403, 'forbidden');
    expect((again.body.error?.details as { reason: string }).reason).toBe('RECIPIENT_SUPPRESSED');
  });

  it('retries a 4xx recipient and delivers it later (email.deferred, then email.delivered)', async () => {
    const email = accepted(await send(base({ to: 'softbounce+retry@simulator.herald.test' })));
    const settled = await until(email._id, (e) => e.status === 'sent');
    expect(settled.recipients[0]).toMatchObject({ status: 'delivered', attempts: 3 });
    const em = scopeToOrg(h.stack.orm.em, orgId);
    expect(await em.count(Event, { type: 'email.deferred', data: { email_id: email._id } })).toBe(2);
    expect(await em.count(Event, { type: 'email.delivered', data: { email_id: email._id } })).toBe(1);
    expect(
      sink.messages().filter((m) => m.subject === 'Hello' && m.rcptTo.includes('softbounce+retry@simulator.herald.test')),
    ).toHaveLength(1);
  });

  it('answers 502 when the provider rejects the message outright, and gives the credits back', async () => {
    const before = (await creditsOf(h.stack.orm, orgId)).balance;
    const response = await send(base({ to: ['reject@simulator.herald.test', 'someone@example.com'] }));
    expectError(response, 502, 'bad_gateway');
    const details = response.body.error?.details as { reason: string; email_id: string; smtp_response: string };
    expect(details.reason).toBe('PROVIDER_REJECTED');
    expect(details.smtp_response).toContain('554');
    const after = (await creditsOf(h.stack.orm, orgId)).balance;
    expect(after).toBe(before);
    expect((await getEmail(details.email_id)).status).toBe('failed');
  });

  it('holds a scheduled send until its time, then delivers it', async () => {
    const at = new Date(Date.now() + 3000);
    const email = accepted(await send(base({ to: 'later@example.com', subject: 'Scheduled', scheduled_at: at.toISOString() })));
    expect(email.status).toBe('scheduled');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(sink.messages().some((m) => m.messageId === email.message_id)).toBe(false);
    expect((await getEmail(email._id)).status).toBe('scheduled');
    const message = await sink.waitFor((m) => m.messageId === email.message_id, 20_000);
    expect(Date.parse(message.receivedAt)).toBeGreaterThanOrEqual(at.getTime());
  });

  it('cancels a scheduled send: nothing reaches the relay', async () => {
    const email = accepted(await send(base({ to: 'never@example.com', scheduled_at: new Date(Date.now() + 2000).toISOString() })));
    const cancelled = await h.request('POST', `/api/v1/outbox/emails/${email._id}/cancel`, { headers: idem() });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 3500));
    expect(sink.messages().some((m) => m.messageId === email.message_id)).toBe(false);
    expect((await getEmail(email._id)).status).toBe('cancelled');
  });

  it('handed the relay only well-formed, DKIM-signed messages (checked on everything the sink received)', async () => {
    expect(sink.messages().length).toBeGreaterThan(3);
    for (const message of sink.messages()) {
      expect(await messageProblems(message.raw, { orm: h.stack.orm }), message.subject ?? '').toEqual([]);
    }
  });
});
