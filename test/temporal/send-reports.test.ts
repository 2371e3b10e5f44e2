import { createTransport } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact, EmailRecipient, Event, Suppression, TransactionalEmail } from '../../db/entities/index.ts';
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

/**
 * Asynchronous delivery reports end to end: a transactional email goes out through the worker
 * to the dev mail sink; reports come back over Herald's inbound SMTP (the sink's ARF for
 * complaint@, and DSNs written here as a remote MTA would) to the VERP address, are ingested,
 * classified and applied to the email's recipients, the suppression list and the contacts.
 */
describe('bounce and complaint reports for sent email', () => {
  let h: InboundHarness;
  let sink: MailSink;
  let temporal: TemporalClientHandle;
  let sends: SendsService;

  beforeAll(async () => {
    const sinkPort = await freePort();
    h = await startInboundHarness({ SMTP_RELAY_URL: `smtp://127.0.0.1:${sinkPort}`, SMTP_RELAY_FINAL_HOP: 'true', SEND_HANDOFF_WAIT_MS: '0' });
    sink = await startMailSink({ smtpPort: sinkPort, feedback: { host: '127.0.0.1', port: h.smtp.port }, logger: createLogger('silent') });
    await h.startWorker();
    await setCredits(h.stack.orm, h.orgId, 100);
    temporal = lazyTemporalClient(h.stack.config);
    sends = createSendsService({ orm: h.stack.orm, blobs: h.blobs(), temporal: temporal.client, config: h.stack.config, logger: createLogger('silent') });
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
    const { email } = await sends.sendEmail(h.orgId, null, v.parse(SendEmailBody, { from: 'Shop <shop@acme.example>', to, subject: 'Receipt', text: 'Thanks' }));
    await waitFor('the email to settle', async () => ((await h.inbox().findOne(TransactionalEmail, { id: email.id }))?.status === 'sent' ? true : undefined), 30_000, 100);
    return email;
  }

  const recipientOf = async (emailId: string) => h.inbox().findOneOrFail(EmailRecipient, { emailId });
  const eventCount = async (type: string, emailId: string) => h.inbox().count(Event, { type, data: { email_id: emailId } });

  function dsn(email: EmailRecord, recipient: string, action: 'failed' | 'delayed', status: string): string {
    const boundary = 'dsn-boundary';
    return [
      'From: Mail Delivery System <MAILER-DAEMON@mx.remote.example>',
      `To: bounce+${email.id}@${BOUNCE_DOMAIN}`,
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
      `Message-ID: <${email.messageId}>`,
      'Subject: Receipt',
      '',
      `--${boundary}--`,
      '',
    ].join('\r\n');
  }

  async function deliverReport(email: EmailRecord, raw: string) {
    const transport = createTransport({ host: '127.0.0.1', port: h.smtp.port, secure: false, ignoreTLS: true });
    await transport.sendMail({ envelope: { from: '', to: [`bounce+${email.id}@${BOUNCE_DOMAIN}`] }, raw });
  }

  it('turns the ARF report of complaint@ into email.complained, a suppression and a complained contact', async () => {
    const address = 'complaint@simulator.herald.test';
    const email = await sendTo(address);
    await waitFor('the complaint to be applied', async () => ((await recipientOf(email.id)).status === 'complained' ? true : undefined), 30_000, 100);
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
    await waitFor('the bounce to be applied', async () => ((await recipientOf(email.id)).status === 'bounced' ? true : undefined), 30_000, 100);
    expect((await recipientOf(email.id)).bounceType).toBe('hard');
    expect(await eventCount('email.bounced', email.id)).toBe(1);
    expect(await h.inbox().count(Suppression, { email: address, reason: 'hard_bounce' })).toBe(1);
    expect((await h.inbox().findOneOrFail(Contact, { email: address })).status).toBe('bounced');
  });

  it('turns a delayed DSN into email.deferred and leaves the recipient as it was', async () => {
    const address = 'slow-mailbox@example.com';
    const email = await sendTo(address);
    await deliverReport(email, dsn(email, address, 'delayed', '4.4.1'));
    await waitFor('the delay to be recorded', async () => ((await eventCount('email.deferred', email.id)) === 1 ? true : undefined), 30_000, 100);
    expect((await recipientOf(email.id)).status).toBe('delivered');
    expect(await h.inbox().count(Suppression, { email: address })).toBe(0);
    expect((await h.inbox().findOneOrFail(Contact, { email: address })).status).toBe('active');
  });
});
