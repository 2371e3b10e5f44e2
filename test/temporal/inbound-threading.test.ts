import { generateKeyPairSync } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Domain, Event, InboxMessage, InboxThread, TransactionalEmail } from '../../db/entities/index.ts';
import * as v from 'valibot';
import { createLogger } from '../../src/logger.ts';
import { createSendsService } from '../../src/modules/sends/sends.service.ts';
import { SendEmailBody } from '../../src/modules/sends/sends.schemas.ts';
import { createVerpSigner } from '../../src/modules/outbound/verp.ts';
import { lazyTemporalClient } from '../../src/temporal/client.ts';
import { setCredits } from '../support/sending.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { INBOUND_FIXTURES, startInboundHarness, type InboundHarness } from './inbound-harness.ts';

/** A live key's send: delivered through the relay (a test key's would stay in the sandbox). */
const LIVE = { keyId: null, keyMode: 'live' } as const;

/**
 * What ingestion decides about a message: its thread (reference, subject, outbound parents),
 * its authentication results (against a loopback DNS server) and its routing (VERP bounces,
 * unroutable mail).
 */
describe('inbound threading, authentication and routing (real SMTP → Temporal → worker)', () => {
  let h: InboundHarness;
  let dns: TestDnsServer;
  const dkimKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });

  beforeAll(async () => {
    dns = await startDnsServer({
      'signed.example': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
      'mail._domainkey.signed.example': {
        TXT: [`v=DKIM1; k=rsa; p=${dkimKeys.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`],
      },
      '_dmarc.signed.example': { TXT: ['v=DMARC1; p=reject'] },
    });
    h = await startInboundHarness({ DNS_SERVERS: dns.address });
    await h.startWorker();
  }, 120_000);

  afterAll(async () => {
    await h.close();
    await dns.close();
  });

  it('threads a reply by In-Reply-To with its parent and records the parent', async () => {
    const first = await h.settled(
      await h.send({
        from: 'ann@remote.example',
        to: 'support@acme.example',
        subject: 'Order 1234',
        text: 'Where is it?',
        messageId: '<order-1234@remote.example>',
      }),
    );
    const reply = await h.settled(
      await h.send({
        from: 'ann@remote.example',
        to: 'support@acme.example',
        subject: 'Something else entirely',
        text: 'Any news?',
        inReplyTo: '<order-1234@remote.example>',
        references: ['<order-1234@remote.example>'],
      }),
    );
    expect(reply.threadId).toBe(first.threadId);
    expect(reply.inReplyToId).toBe(first.id);
    expect(reply.inReplyTo).toBe('order-1234@remote.example');
    const thread = await h.inbox().findOneOrFail(InboxThread, { id: first.threadId });
    expect(thread).toMatchObject({ messageCount: 2, subject: 'Order 1234', normalizedSubject: 'order 1234' });
    expect(thread.participants.sort()).toEqual(['ann@remote.example', 'support@acme.example']);
  }, 60_000);

  it('threads by normalised subject and a shared outside participant, and not without one', async () => {
    const first = await h.settled(
      await h.send({ from: 'bo@remote.example', to: 'support@acme.example', subject: 'Quarterly numbers', text: 'a' }),
    );
    const again = await h.settled(
      await h.send({ from: 'bo@remote.example', to: 'support@acme.example', subject: 'RE: [ext] AW: Quarterly  numbers', text: 'b' }),
    );
    const stranger = await h.settled(
      await h.send({ from: 'cy@elsewhere.example', to: 'support@acme.example', subject: 'Re: Quarterly numbers', text: 'c' }),
    );
    expect(again.threadId).toBe(first.threadId);
    expect(again.inReplyToId).toBeNull();
    expect(stranger.threadId).not.toBe(first.threadId);
  }, 60_000);

  it('threads a reply to an outbound message recorded by the send pipeline', async () => {
    await setCredits(h.stack.orm, h.orgId, 10);
    const temporal = lazyTemporalClient(h.stack.config);
    try {
      const sends = createSendsService({
        orm: h.stack.orm,
        blobs: h.blobs(),
        temporal: temporal.client,
        config: h.stack.config,
        logger: createLogger('silent'),
      });
      const body = v.parse(SendEmailBody, {
        from: 'Billing <billing@acme.example>',
        to: 'dee@remote.example',
        subject: 'Your invoice',
        text: 'Attached.',
      });
      await sends.sendEmail(h.orgId, LIVE, body);
    } finally {
      await temporal.close();
    }
    const outbound = await h.inbox().findOneOrFail(InboxMessage, { subject: 'Your invoice', direction: 'outbound' });
    expect(outbound).toMatchObject({
      direction: 'outbound',
      attachmentIngestStatus: 'unavailable',
      attachmentsReady: true,
      attachmentCount: 0,
    });
    const reply = await h.settled(
      await h.send({
        from: 'dee@remote.example',
        to: 'billing@acme.example',
        subject: 'Re: Your invoice',
        text: 'Thanks',
        inReplyTo: `<${outbound.rfcMessageId}>`,
      }),
    );
    expect(reply.threadId).toBe(outbound.threadId);
    expect(reply.inReplyToId).toBe(outbound.id);
  }, 60_000);

  it('keeps SPF, DKIM and DMARC results of a signed message', async () => {
    const dkim = {
      domainName: 'signed.example',
      keySelector: 'mail',
      privateKey: dkimKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    };
    const message = await h.settled(
      await h.send({ from: 'news@signed.example', to: 'support@acme.example', subject: 'Signed', text: 'trust me' }, { dkim }),
    );
    expect(message.authResults).toMatchObject({
      spf: { result: 'pass', domain: 'signed.example' },
      dkim: { result: 'pass', signatures: [{ domain: 'signed.example', selector: 'mail', result: 'pass' }] },
      dmarc: { result: 'pass', policy: 'reject' },
    });
  }, 60_000);

  it('records the message with temperror results when DNS does not answer', async () => {
    dns.setSilent(true);
    try {
      // A sender not looked up before: answers already cached (DNS_CACHE_TTL_SECONDS) would still be used.
      const message = await h.settled(
        await h.send({ from: 'news@unlooked.example', to: 'support@acme.example', subject: 'DNS down', text: 'x' }),
      );
      expect(message.authResults).toMatchObject({ spf: { result: 'temperror' } });
      expect(message.attachmentIngestStatus).toBe('ready');
    } finally {
      dns.setSilent(false);
    }
  }, 60_000);

  it('routes a DSN to a VERP bounce address to the workspace of the email it names, as kind bounce', async () => {
    const domain = await h.inbox().findOneOrFail(Domain, { domain: 'acme.example' });
    const email = h.inbox().create(TransactionalEmail, {
      orgId: h.orgId,
      domainId: domain.id,
      domain: 'acme.example',
      fromEmail: 'billing@acme.example',
      fromName: null,
      replyTo: null,
      subject: 'Invoice',
      html: null,
      text: 'x',
      messageId: 'verp-routing.0@acme.example',
      status: 'sent',
      scheduledAt: null,
      quotaDay: new Date().toISOString().slice(0, 10),
      lastError: null,
      sentAt: null,
      settledAt: null,
      cancelledAt: null,
    });
    await h.inbox().persist(email).flush();
    const raw = await readFile(new URL('inbound-dsn-hard-bounce-to-verp.eml', INBOUND_FIXTURES));
    const inboundId = await h.send({
      envelope: { from: '', to: createVerpSigner(h.stack.config.encryptionKey!).address(email.id, 'bounces.acme.example') },
      raw,
    });
    const message = await h.settled(inboundId);
    expect(message).toMatchObject({ subject: 'Undelivered Mail Returned to Sender', kind: 'bounce' });
    expect(await h.stack.orm.em.fork().count(InboxMessage, { inboundId }, { filters: false })).toBe(1);
    // Reports are not inbound mail for subscribers: no email.received.
    const received = (await h.inbox().find(Event, { type: 'email.received' })).filter(
      (event) => (event.data as { message: { id: string } }).message.id === message.id,
    );
    expect(received).toEqual([]);
  }, 60_000);

  it('marks a message no workspace owns any more as failed, with the reason', async () => {
    const inboundId = await h.send({
      envelope: {
        from: 'x@remote.example',
        to: createVerpSigner(h.stack.config.encryptionKey!).address('0123456789abcdef01234567', 'bounces.acme.example'),
      },
      raw: 'Subject: nobody\r\n\r\nx\r\n',
    });
    const row = await h.ended(inboundId);
    expect(row).toMatchObject({ status: 'failed', lastError: 'no workspace owns any recipient' });
  }, 60_000);
});
