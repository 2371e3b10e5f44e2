import { createTransport } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact, EmailRecipient, Event, InboxMessage, Suppression, TransactionalEmail } from '../../db/entities/index.ts';
import { startMailSink, type MailSink } from '../../src/dev/mail-sink.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { freePort } from '../../src/dev/ports.ts';
import { createLogger } from '../../src/logger.ts';
import { createSendsService, type SendsService } from '../../src/modules/sends/sends.service.ts';
import { SendEmailBody } from '../../src/modules/sends/sends.schemas.ts';
import type { EmailRecord } from '../../src/modules/sends/sends.serializer.ts';
import { lazyTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import * as v from 'valibot';
import { setCredits } from '../support/sending.ts';
import { BOUNCE_DOMAIN, startInboundHarness, type InboundHarness } from './inbound-harness.ts';

/** A live key's send: delivered through the relay (a test key's would stay in the sandbox). */
const LIVE = { keyId: null, keyMode: 'live' } as const;

/**
 * Asynchronous delivery reports end to end: a transactional email goes out through the worker
 * to the dev mail sink; reports come back over Herald's inbound SMTP (the sink's ARF for
 * complaint@, and DSNs written here as a remote MTA would) to the signed VERP return path the
 * sink saw, are ingested, classified and applied to the email's recipients, the suppression
 * list and the contacts. Reports that do not prove they answer that message change nothing.
 */
describe('bounce and complaint reports for sent email', () => {
  let h: InboundHarness;
  let sink: MailSink;
  let temporal: TemporalClientHandle;
  let sends: SendsService;

  beforeAll(async () => {
    const sinkPort = await freePort();
    h = await startInboundHarness({
      SMTP_RELAY_URL: `smtp://127.0.0.1:${sinkPort}`,
      SMTP_RELAY_FINAL_HOP: 'true',
      SEND_HANDOFF_WAIT_MS: '0',
    });
    sink = await startMailSink({ smtpPort: sinkPort, feedback: { host: '127.0.0.1', port: h.smtp.port }, logger: createLogger('silent') });
    await h.startWorker();
    await setCredits(h.stack.orm, h.orgId, 100);
    temporal = lazyTemporalClient(h.stack.config);
    sends = createSendsService({
      orm: h.stack.orm,
      blobs: h.blobs(),
      temporal: temporal.client,
      config: h.stack.config,
      logger: createLogger('silent'),
    });
  }, 120_000);

  afterAll(async () => {
    await h?.close();
    await sink?.close();
    await temporal?.close();
  });

  async function sendTo(to: string) {
    const em = h.inbox();
    if (!(await em.findOne(Contact, { email: to }))) {
      em.create(Contact, { orgId: h.orgId, email: to });
      await em.flush();
    }
    const { email } = await sends.sendEmail(
      h.orgId,
      LIVE,
      v.parse(SendEmailBody, { from: 'Shop <shop@acme.example>', to, subject: 'Receipt', text: 'Thanks' }),
    );
    await waitFor(
      'the email to settle',
      async () => ((await h.inbox().findOne(TransactionalEmail, { id: email.id }))?.status === 'sent' ? true : undefined),
      30_000,
      100,
    );
    return email;
  }

  /** The envelope sender the relay saw for an email: its signed return path. */
  function returnPathOf(email: EmailRecord): string {
    const seen = sink.messages().find((m) => m.mailFrom.includes(email.id));
    expect(seen, `the sink received ${email.id}`).toBeDefined();
    return seen!.mailFrom;
  }

  const recipientOf = async (emailId: string) => h.inbox().findOneOrFail(EmailRecipient, { emailId });
  const eventCount = async (type: string, emailId: string) => h.inbox().count(Event, { type, data: { email_id: emailId } });

  function dsn(
    email: EmailRecord,
    recipient: string,
    action: 'failed' | 'delayed',
    status: string,
    quotedMessageId = email.messageId,
  ): string {
    const boundary = 'dsn-boundary';
    return [
      'From: Mail Delivery System <MAILER-DAEMON@mx.remote.example>',
      `To: ${returnPathOf(email)}`,
      'Subject: Undelivered Mail Returned to Sender',
      'MIME-Version: 1.0',
      `Content-Type: multipart/report; report-type=delivery-status; boundary="${boundary}"`,
      '',
      `--${boundary}`,
      'Content-Type: text/plain',
      '',
      'The message could not be delivered.',
      `--${boundary}`,
      'Content-Type: message/delivery-status',
      '',
      'Reporting-MTA: dns; mx.remote.example',
      '',
      `Final-Recipient: rfc822; ${recipient}`,
      `Action: ${action}`,
      `Status: ${status}`,
      `Diagnostic-Code: smtp; ${status.startsWith('5') ? '550 5.1.1 user unknown' : '451 4.4.1 try later'}`,
      '',
      `--${boundary}`,
      'Content-Type: text/rfc822-headers',
      '',
      `Message-ID: <${quotedMessageId}>`,
      'Subject: Receipt',
      '',
      `--${boundary}--`,
      '',
    ].join('\r\n');
  }

  async function deliverReport(email: EmailRecord, raw: string, to = returnPathOf(email)): Promise<string> {
    const transport = createTransport({ host: '127.0.0.1', port: h.smtp.port, secure: false, ignoreTLS: true });
    const info = (await transport.sendMail({ envelope: { from: '', to: [to] }, raw })) as { response?: string };
    return /queued as ([a-f0-9]{24})/.exec(info.response ?? '')![1]!;
  }

  /** The SMTP failure of delivering a report to `to`, or null when it was accepted. */
  async function refusal(raw: string, to: string): Promise<{ responseCode?: number; response?: string } | null> {
    const transport = createTransport({ host: '127.0.0.1', port: h.smtp.port, secure: false, ignoreTLS: true });
    return transport.sendMail({ envelope: { from: '', to: [to] }, raw }).then(
      () => null,
      (error: unknown) => error as { responseCode?: number; response?: string },
    );
  }

  /** The report's inbox message once recorded (a report that changes nothing is still kept). */
  async function keptReport(inboundId: string) {
    return waitFor(
      'the report to be recorded',
      async () => (await h.inbox().findOne(InboxMessage, { inboundId })) ?? undefined,
      30_000,
      100,
    );
  }

  async function expectUntouched(emailId: string, address: string) {
    expect((await recipientOf(emailId)).status).toBe('delivered');
    expect(await eventCount('email.bounced', emailId)).toBe(0);
    expect(await h.inbox().count(Suppression, { email: address })).toBe(0);
    expect((await h.inbox().findOneOrFail(Contact, { email: address })).status).toBe('active');
  }

  it('turns the ARF report of complaint@ into email.complained, a suppression and a complained contact', async () => {
    const address = 'complaint@simulator.herald.test';
    const email = await sendTo(address);
    await waitFor(
      'the complaint to be applied',
      async () => ((await recipientOf(email.id)).status === 'complained' ? true : undefined),
      30_000,
      100,
    );
    expect(await eventCount('email.complained', email.id)).toBe(1);
    expect(await h.inbox().count(Suppression, { email: address, reason: 'complaint' })).toBe(1);
    expect((await h.inbox().findOneOrFail(Contact, { email: address })).status).toBe('complained');
    expect(await h.inbox().count(Event, { type: 'contact.complained' })).toBe(1);
  });

  it('turns a DSN (failed, 5.1.1) to the VERP address into a hard bounce, a suppression and a bounced contact', async () => {
    const address = 'later-gone@example.com';
    const email = await sendTo(address);
    expect((await recipientOf(email.id)).status).toBe('delivered');
    await deliverReport(email, dsn(email, address, 'failed', '5.1.1'));
    await waitFor(
      'the bounce to be applied',
      async () => ((await recipientOf(email.id)).status === 'bounced' ? true : undefined),
      30_000,
      100,
    );
    expect((await recipientOf(email.id)).bounceType).toBe('hard');
    expect(await eventCount('email.bounced', email.id)).toBe(1);
    expect(await h.inbox().count(Suppression, { email: address, reason: 'hard_bounce' })).toBe(1);
    expect((await h.inbox().findOneOrFail(Contact, { email: address })).status).toBe('bounced');
  });

  it('turns a delayed DSN into email.deferred and leaves the recipient as it was', async () => {
    const address = 'slow-mailbox@example.com';
    const email = await sendTo(address);
    await deliverReport(email, dsn(email, address, 'delayed', '4.4.1'));
    await waitFor(
      'the delay to be recorded',
      async () => ((await eventCount('email.deferred', email.id)) === 1 ? true : undefined),
      30_000,
      100,
    );
    expect((await recipientOf(email.id)).status).toBe('delivered');
    expect(await h.inbox().count(Suppression, { email: address })).toBe(0);
    expect((await h.inbox().findOneOrFail(Contact, { email: address })).status).toBe('active');
  });

  it('signs the return path: an unsigned bounce address (the legacy form, on either host) is refused at RCPT', async () => {
    const address = 'password-reset@example.com';
    const email = await sendTo(address);
    const signed = returnPathOf(email);
    expect(signed).toMatch(new RegExp(`^bounce\\+${email.id}-[0-9a-f]{20}@bounces\\.acme\\.example$`));
    const tag = /-([0-9a-f]{20})@/.exec(signed)![1]!;
    const flipped = signed.replace(tag, tag.slice(0, -1) + (tag.endsWith('0') ? '1' : '0'));
    for (const forged of [`bounce+${email.id}@bounces.acme.example`, `bounce+${email.id}@${BOUNCE_DOMAIN}`, flipped]) {
      const failure = await refusal(dsn(email, address, 'failed', '5.1.1'), forged);
      expect(failure?.responseCode, forged).toBe(550);
      expect(failure?.response).toMatch(/5\.1\.1/);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    await expectUntouched(email.id, address);
  });

  it('applies a report only to a recipient it names: a DSN naming someone else changes nothing and is kept', async () => {
    const address = 'customer@example.com';
    const email = await sendTo(address);
    const inboundId = await deliverReport(email, dsn(email, 'victim@example.org', 'failed', '5.1.1'));
    expect((await keptReport(inboundId)).kind).toBe('bounce');
    await expectUntouched(email.id, address);
    expect(await h.inbox().count(Suppression, { email: 'victim@example.org' })).toBe(0);
  });

  it('does not apply a report quoting another Message-ID than the email its return path names', async () => {
    const address = 'quoted@example.com';
    const email = await sendTo(address);
    const other = await sendTo('someone-else@example.com');
    const inboundId = await deliverReport(email, dsn(email, address, 'failed', '5.1.1', other.messageId));
    expect((await keptReport(inboundId)).kind).toBe('bounce');
    await expectUntouched(email.id, address);
  });

  it('does not apply a report that reaches the workspace at an ordinary address, even quoting the real Message-ID', async () => {
    const address = 'quoting@example.com';
    const email = await sendTo(address);
    const inboundId = await deliverReport(email, dsn(email, address, 'failed', '5.1.1'), 'support@acme.example');
    expect((await keptReport(inboundId)).kind).toBe('bounce');
    await expectUntouched(email.id, address);
  });
});
