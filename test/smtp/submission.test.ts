import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTransport } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmailRecipient, InboxMessage, TransactionalEmail } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { startSmtp } from '../../src/main-smtp.ts';
import type { RunningSmtp } from '../../src/smtp/inbound-server.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';
import { createTestCertificates } from '../support/test-certificates.ts';

/**
 * The SMTP submission front door, driven by nodemailer as an app would: STARTTLS, AUTH with an
 * API key, each message a transactional email visible through the API; refusals as SMTP replies.
 */
describe('SMTP submission (API key as the password)', () => {
  let stack: TestStack;
  let smtp: RunningSmtp;
  let orgId: string;
  let key: string;
  let readOnlyKey: string;
  let domain: string;
  const certificates = createTestCertificates();
  const transport = (password: string, options: Record<string, unknown> = {}) =>
    createTransport({
      host: '127.0.0.1',
      port: smtp.submissionPort!,
      secure: false,
      requireTLS: true,
      tls: { rejectUnauthorized: false },
      auth: { user: 'herald', pass: password },
      ...options,
    });
  const emails = () => scopeToOrg(stack.orm.em, orgId).find(TransactionalEmail, {}, { orderBy: { createdAt: 'asc' } });

  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), 'herald-submission-'));
    const cert = certificates.selfSigned('localhost');
    await writeFile(join(dir, 'key.pem'), cert.key);
    stack = await createTestStack({
      SMTP_TLS_KEY_FILE: join(dir, 'key.pem'),
      SMTP_TLS_CERT_FILE: cert.certFile,
      SMTP_SUBMISSIONS_PORT: '0',
      BLOB_DIR: dir,
    });
    const owner = await createOrgWithKey(stack.orm, { scopes: ['outbox.transactional:send'], mode: 'live' });
    orgId = owner.org.id;
    key = owner.key;
    const { createApiKeysService } = await import('../../src/modules/auth/api-keys.service.ts');
    readOnlyKey = (await createApiKeysService({ orm: stack.orm }).createApiKey({ orgId, scopes: ['contacts:read'] })).key;
    domain = (await addSendingDomain(stack.orm, orgId)).domain;
    await setCredits(stack.orm, orgId, 10_000);
    smtp = await startSmtp(stack.config, createLogger('silent'));
  }, 60_000);
  afterAll(async () => {
    await smtp?.close();
    await stack?.close();
    certificates.remove();
  });

  it('accepts a message after STARTTLS and AUTH, as a transactional email with to, cc, bcc, bodies, attachments and threading headers', async () => {
    const info = await transport(key).sendMail({
      from: `Shop <shop@${domain}>`,
      to: 'ada@example.com',
      cc: 'bob@example.com',
      bcc: 'audit@example.com',
      replyTo: 'help@example.com',
      subject: 'Your receipt',
      text: 'Thanks for your order.',
      html: '<p>Thanks for your <b>order</b>.</p>',
      headers: { 'X-Campaign': 'spring', 'In-Reply-To': '<earlier@example.com>' },
      attachments: [{ filename: 'receipt.txt', content: 'total: 12.50' }],
    });
    const emailId = /queued as ([0-9a-f]{24})/.exec(info.response)?.[1];
    expect(emailId, info.response).toBeDefined();
    const email = await scopeToOrg(stack.orm.em, orgId).findOneOrFail(TransactionalEmail, { id: emailId! });
    expect(email).toMatchObject({
      fromEmail: `shop@${domain}`,
      fromName: 'Shop',
      subject: 'Your receipt',
      text: 'Thanks for your order.',
      replyTo: 'help@example.com',
      status: 'queued',
    });
    expect(email.html).toContain('<b>order</b>');
    expect(email.headers).toMatchObject({ 'X-Campaign': 'spring', 'In-Reply-To': '<earlier@example.com>' });
    expect(email.attachments.map((a) => [a.filename, a.size_bytes])).toEqual([['receipt.txt', 12]]);
    const recipients = await scopeToOrg(stack.orm.em, orgId).find(EmailRecipient, { emailId: emailId! }, { orderBy: { id: 'asc' } });
    expect(recipients.map((r) => [r.email, r.kind])).toEqual([
      ['ada@example.com', 'to'],
      ['bob@example.com', 'cc'],
      ['audit@example.com', 'bcc'],
    ]);
    expect(await scopeToOrg(stack.orm.em, orgId).count(InboxMessage, { emailId: emailId! })).toBe(1);
  });

  it('sends a resubmitted message (same Message-ID and content) once, even rebuilt with another Date', async () => {
    const message = { from: `shop@${domain}`, to: 'ada@example.com', subject: 'Once', text: 'x', messageId: '<resubmit-1@app.example>' };
    const first = await transport(key).sendMail({ ...message, date: new Date('2026-11-25T10:00:00Z') });
    // What a client retrying after a lost reply sends: the message built again, with a new Date header.
    const second = await transport(key).sendMail({ ...message, date: new Date('2026-11-25T10:00:07Z') });
    expect(second.response).toBe(first.response);
    expect((await emails()).filter((e) => e.subject === 'Once')).toHaveLength(1);
  });

  it('refuses other content under a Message-ID already submitted (550), and sends nothing more', async () => {
    const message = {
      from: `shop@${domain}`,
      to: 'ada@example.com',
      subject: 'Twice',
      text: 'first body',
      messageId: '<resubmit-2@app.example>',
    };
    await transport(key).sendMail(message);
    await expect(transport(key).sendMail({ ...message, text: 'another body' })).rejects.toMatchObject({ responseCode: 550 });
    expect((await emails()).filter((e) => e.subject === 'Twice')).toHaveLength(1);
  });

  it('answers 535 for a wrong key and for a key without outbox.transactional:send', async () => {
    await expect(transport('hrld_live_notakey').verify()).rejects.toMatchObject({ responseCode: 535 });
    await expect(transport(readOnlyKey).verify()).rejects.toMatchObject({ responseCode: 535 });
  });

  it('accepts a message over implicit TLS (RFC 8314, the submissions port) and nothing in plain text there', async () => {
    expect(smtp.submissionsPort).not.toBeNull();
    expect(smtp.submissionsPort).not.toBe(smtp.submissionPort);
    const tls = createTransport({
      host: '127.0.0.1',
      port: smtp.submissionsPort!,
      secure: true,
      tls: { rejectUnauthorized: false },
      auth: { user: 'herald', pass: key },
    });
    const info = await tls.sendMail({
      from: `Shop <shop@${domain}>`,
      to: 'implicit@example.com',
      subject: 'Over implicit TLS',
      text: 'Hello.',
    });
    const emailId = /queued as ([0-9a-f]{24})/.exec(info.response)?.[1];
    expect(emailId, info.response).toBeDefined();
    expect(await scopeToOrg(stack.orm.em, orgId).findOneOrFail(TransactionalEmail, { id: emailId! })).toMatchObject({
      subject: 'Over implicit TLS',
      status: 'queued',
    });
    const plain = createTransport({
      host: '127.0.0.1',
      port: smtp.submissionsPort!,
      secure: false,
      ignoreTLS: true,
      connectionTimeout: 3_000,
      greetingTimeout: 3_000,
      auth: { user: 'herald', pass: key },
    });
    await expect(
      plain.sendMail({ from: `Shop <shop@${domain}>`, to: 'plain@example.com', subject: 'Plain', text: 'Hello.' }),
    ).rejects.toThrow();
  });

  it('refuses AUTH before STARTTLS when TLS is configured', async () => {
    const plain = createTransport({
      host: '127.0.0.1',
      port: smtp.submissionPort!,
      secure: false,
      ignoreTLS: true,
      auth: { user: 'herald', pass: key },
    });
    await expect(plain.verify()).rejects.toMatchObject({ responseCode: 538 });
  });

  it("answers the API's refusals as SMTP replies: 550 for an unknown sending domain, a suppressed recipient and a bad message", async () => {
    const refused = (message: Record<string, unknown>) => transport(key).sendMail({ text: 'x', subject: 'refused', ...message });
    await expect(refused({ from: 'someone@not-ours.example', to: 'ada@example.com' })).rejects.toMatchObject({
      responseCode: 550,
      response: expect.stringContaining('DOMAIN_NOT_FOUND'),
    });
    await expect(refused({ from: `shop@${domain}`, to: 'suppressed@simulator.herald.test' })).rejects.toMatchObject({
      responseCode: 550,
      response: expect.stringContaining('RECIPIENT_SUPPRESSED'),
    });
    await expect(refused({ from: `shop@${domain}`, to: 'ada@example.com', subject: '' })).rejects.toMatchObject({ responseCode: 550 });
    await expect(
      transport(key).sendMail({
        from: `shop@${domain}`,
        to: 'ada@example.com',
        subject: 'No to',
        text: 'x',
        envelope: { from: `shop@${domain}`, to: ['other@example.com'] },
      }),
    ).rejects.toMatchObject({ responseCode: 550 });
  });

  it('answers 552 for a message over the size limit', async () => {
    const big = Buffer.alloc(26 * 1024 * 1024, 'a');
    await expect(
      transport(key).sendMail({
        from: `shop@${domain}`,
        to: 'ada@example.com',
        subject: 'big',
        text: 'x',
        attachments: [{ filename: 'big.bin', content: big }],
      }),
    ).rejects.toMatchObject({ responseCode: 552 });
  }, 60_000);

  it('takes many messages over one pooled connection, each an email', async () => {
    const pooled = transport(key, { pool: true, maxConnections: 2 });
    const before = (await emails()).length;
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        pooled.sendMail({ from: `shop@${domain}`, to: `pool${i}@example.com`, subject: `pool ${i}`, text: 'x' }),
      ),
    );
    pooled.close();
    expect((await emails()).length).toBe(before + 40);
  });

  it('is off with SMTP_SUBMISSION_PORT=off and on 2587 by default outside production', () => {
    expect(loadConfig({ SMTP_SUBMISSION_PORT: 'off' }).submission).toBeNull();
    expect(loadConfig({}).submission?.port).toBe(2587);
  });
});
