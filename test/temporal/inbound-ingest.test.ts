import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTransport, type SentMessageInfo } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Domain, Event, InboundMessage, InboxAttachment, InboxMessage, InboxThread, TransactionalEmail } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { createFsBlobStore, readBlob } from '../../src/blob/blob-store.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { startSmtp } from '../../src/main-smtp.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import { AttachmentsIncompleteError } from '../../src/modules/inbound/attachments.ts';
import { createInboundIngestion } from '../../src/modules/inbound/ingestion.ts';
import { recordOutboundMessage } from '../../src/modules/inbox/outbound.ts';
import type { RunningSmtp } from '../../src/smtp/inbound-server.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { createOrg } from '../support/factories.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

const FIXTURES = new URL('../smtp/fixtures/', import.meta.url);
const logger = createLogger('warn');

describe('inbound ingestion (real SMTP → blob store → Temporal → worker)', () => {
  let stack: TestStack;
  let smtp: RunningSmtp;
  let worker: RunningWorker | null = null;
  let blobDir: string;
  let orgId: string;
  let otherOrgId: string;
  let dns: TestDnsServer;
  const dkimKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });

  const blobs = () => createFsBlobStore(blobDir);
  const transport = () => createTransport({ host: '127.0.0.1', port: smtp.port, secure: false, ignoreTLS: true });
  const inbox = (org = orgId) => scopeToOrg(stack.orm.em, org);

  async function send(mail: Parameters<ReturnType<typeof transport>['sendMail']>[0]): Promise<string> {
    const info = (await transport().sendMail(mail)) as SentMessageInfo;
    const id = /queued as ([a-f0-9]{24})/.exec(info.response ?? '')?.[1];
    expect(id, info.response).toBeDefined();
    return id!;
  }

  /** The inbox message of a raw message in a workspace, once its attachments are settled. */
  function settled(inboundId: string, org = orgId): Promise<InboxMessage> {
    return waitFor(
      `inbound ${inboundId} to settle in ${org}`,
      async () => {
        const message = await inbox(org).findOne(InboxMessage, { inboundId });
        return message?.attachmentsReady ? message : undefined;
      },
      60_000,
      100,
    );
  }

  async function ingested(inboundId: string): Promise<InboundMessage> {
    return waitFor(
      `inbound ${inboundId} to be ingested`,
      async () => {
        const row = await stack.orm.em.fork().findOne(InboundMessage, { id: inboundId });
        return row && row.status !== 'received' ? row : undefined;
      },
      60_000,
      100,
    );
  }

  beforeAll(async () => {
    installTemporalLogging(logger);
    blobDir = await mkdtemp(join(tmpdir(), 'herald-ingest-'));
    dns = await startDnsServer({
      'signed.example': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
      'mail._domainkey.signed.example': {
        TXT: [`v=DKIM1; k=rsa; p=${dkimKeys.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`],
      },
      '_dmarc.signed.example': { TXT: ['v=DMARC1; p=reject'] },
    });
    stack = await createTestStack({ BLOB_DIR: blobDir, DNS_SERVERS: dns.address, BOUNCE_DOMAIN: 'bounces.ingest.test' });
    const domains = createDomainsService({ orm: stack.orm, encryptionKey: stack.config.encryptionKey });
    orgId = (await createOrg(stack.orm)).org.id;
    otherOrgId = (await createOrg(stack.orm)).org.id;
    await domains.addDomain({ orgId, domain: 'acme.example', verified: true });
    await domains.addDomain({ orgId: otherOrgId, domain: 'other.example', verified: true });
    smtp = await startSmtp(stack.config, createLogger('silent'));
  }, 60_000);

  afterAll(async () => {
    await worker?.shutdown();
    await smtp.close();
    await stack.close();
    await rm(blobDir, { recursive: true, force: true });
    await dns.close();
  });

  const files = [
    { filename: 'report.pdf', content: randomBytes(300_000), contentType: 'application/pdf' },
    { filename: 'photo.jpg', content: randomBytes(1_200_000), contentType: 'image/jpeg' },
    { filename: 'notes.txt', content: Buffer.from('plain notes\r\nline two\r\n'), contentType: 'text/plain' },
  ];

  it('records the message pending with its attachment count, then stores the attachments and turns ready (activity steps)', async () => {
    const inboundId = await send({ from: 'Client <client@remote.example>', to: 'support@acme.example', subject: 'Steps', text: 'body', attachments: files });
    const ingestion = createInboundIngestion({ orm: stack.orm, blobs: blobs(), config: stack.config });
    const recorded = await ingestion.recordMessages(inboundId);
    expect(recorded).toMatchObject({ status: 'recorded', orgIds: [orgId], attachmentsPending: true });
    const pending = await inbox().findOneOrFail(InboxMessage, { inboundId });
    expect(pending).toMatchObject({ attachmentIngestStatus: 'pending', attachmentsReady: false, attachmentCount: 3, kind: 'message' });
    // A retry of the step creates nothing twice.
    await ingestion.recordMessages(inboundId);
    expect(await inbox().count(InboxMessage, { inboundId })).toBe(1);

    await ingestion.storeAttachments(inboundId, { final: false });
    const ready = await inbox().findOneOrFail(InboxMessage, { inboundId });
    expect(ready).toMatchObject({ attachmentIngestStatus: 'ready', attachmentsReady: true, failedAttachments: [] });
    expect(ready.updatedAt.getTime()).toBeGreaterThan(pending.updatedAt.getTime());
    await ingestion.storeAttachments(inboundId, { final: false });
    expect(await inbox().count(InboxAttachment, { messageId: ready.id })).toBe(3);
    await ingestion.markIngested(inboundId);
  });

  it('settles partial_failure, naming the attachment that could not be stored, on the final attempt only', async () => {
    const inboundId = await send({ from: 'client@remote.example', to: 'support@acme.example', subject: 'Partial', text: 'body', attachments: files });
    const ingestion = createInboundIngestion({ orm: stack.orm, blobs: blobs(), config: stack.config });
    await ingestion.recordMessages(inboundId);
    const pending = await inbox().findOneOrFail(InboxMessage, { inboundId });
    // A directory where attachment 1's blob goes: that one write fails, the others succeed.
    await mkdir(join(blobDir, 'inbox', orgId, pending.id, '1', 'blocked'), { recursive: true });

    await expect(ingestion.storeAttachments(inboundId, { final: false })).rejects.toBeInstanceOf(AttachmentsIncompleteError);
    expect(await inbox().findOneOrFail(InboxMessage, { inboundId })).toMatchObject({ attachmentIngestStatus: 'pending', attachmentsReady: false });
    expect((await inbox().find(InboxAttachment, { messageId: pending.id })).map((a) => a.position).sort()).toEqual([0, 2]);

    await ingestion.storeAttachments(inboundId, { final: true });
    expect(await inbox().findOneOrFail(InboxMessage, { inboundId })).toMatchObject({
      attachmentIngestStatus: 'partial_failure',
      attachmentsReady: true,
      failedAttachments: [{ filename: 'photo.jpg', reason: 'ingest_failed' }],
    });
    await ingestion.markIngested(inboundId);
  });

  it('settles what is still pending when ingestion is marked failed, so nothing stays pending', async () => {
    const inboundId = await send({ from: 'client@remote.example', to: 'support@acme.example', subject: 'Gives up', text: 'body', attachments: files.slice(0, 1) });
    const ingestion = createInboundIngestion({ orm: stack.orm, blobs: blobs(), config: stack.config });
    await ingestion.recordMessages(inboundId);
    await ingestion.markFailed(inboundId, 'disk on fire');
    expect(await inbox().findOneOrFail(InboxMessage, { inboundId })).toMatchObject({
      attachmentIngestStatus: 'partial_failure',
      attachmentsReady: true,
      failedAttachments: [{ filename: 'attachment-1', reason: 'ingest_failed' }],
    });
    expect(await stack.orm.em.fork().findOneOrFail(InboundMessage, { id: inboundId })).toMatchObject({ status: 'failed', lastError: 'disk on fire' });
  });

  it('ingests a message with 3 attachments end to end: ready, bytes identical, email.received written', async () => {
    worker = await startWorker(stack.config, logger);
    const inboundId = await send({
      from: 'Client <client@remote.example>',
      to: ['support@acme.example'],
      cc: ['Someone <someone@remote.example>'],
      subject: 'Three attachments',
      text: 'See attached.',
      html: '<p>See attached.</p>',
      messageId: '<three-attachments@remote.example>',
      attachments: files,
    });
    const message = await settled(inboundId);
    expect(message).toMatchObject({
      direction: 'inbound',
      subject: 'Three attachments',
      fromEmail: 'client@remote.example',
      fromName: 'Client',
      to: [{ email: 'support@acme.example', name: '' }],
      cc: [{ email: 'someone@remote.example', name: 'Someone' }],
      rfcMessageId: 'three-attachments@remote.example',
      attachmentIngestStatus: 'ready',
      attachmentCount: 3,
      failedAttachments: [],
    });
    expect(message.text).toContain('See attached.');
    expect(message.html).toContain('<p>See attached.</p>');
    expect(message.authResults).toMatchObject({ spf: { result: expect.any(String) as unknown }, dkim: { result: 'none' }, dmarc: { result: expect.any(String) as unknown } });

    const attachments = await inbox().find(InboxAttachment, { messageId: message.id }, { orderBy: { position: 'asc' } });
    expect(attachments.map((a) => [a.position, a.filename, a.contentType, a.status])).toEqual([
      [0, 'report.pdf', 'application/pdf', 'stored'],
      [1, 'photo.jpg', 'image/jpeg', 'stored'],
      [2, 'notes.txt', 'text/plain', 'stored'],
    ]);
    for (const [index, attachment] of attachments.entries()) {
      expect(attachment.blobKey).toBe(`inbox/${orgId}/${message.id}/${index}`);
      const bytes = await readBlob(blobs(), attachment.blobKey!);
      expect(bytes.equals(files[index]!.content), `attachment ${index} differs`).toBe(true);
      expect(attachment.sizeBytes).toBe(files[index]!.content.length);
    }

    const events = await inbox().find(Event, { type: 'email.received' });
    const event = events.find((candidate) => (candidate.data as { message: { id: string } }).message.id === message.id);
    expect(event?.data).toEqual({
      message: {
        id: message.id,
        thread_id: message.threadId,
        direction: 'inbound',
        subject: 'Three attachments',
        from: { email: 'client@remote.example', name: 'Client' },
        to: [{ email: 'support@acme.example', name: '' }],
        rfc_message_id: 'three-attachments@remote.example',
        attachment_count: 3,
        created_at: message.createdAt.toISOString(),
      },
    });
    expect((await ingested(inboundId)).status).toBe('ingested');
  }, 90_000);

  it('threads a reply by In-Reply-To with its parent and records the parent', async () => {
    const first = await settled(await send({ from: 'ann@remote.example', to: 'support@acme.example', subject: 'Order 1234', text: 'Where is it?', messageId: '<order-1234@remote.example>' }));
    const reply = await settled(
      await send({
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
    const thread = await inbox().findOneOrFail(InboxThread, { id: first.threadId });
    expect(thread).toMatchObject({ messageCount: 2, subject: 'Order 1234', normalizedSubject: 'order 1234' });
    expect(thread.participants.sort()).toEqual(['ann@remote.example', 'support@acme.example']);
  }, 60_000);

  it('threads by normalised subject and a shared outside participant, and not without one', async () => {
    const first = await settled(await send({ from: 'bo@remote.example', to: 'support@acme.example', subject: 'Quarterly numbers', text: 'a' }));
    const again = await settled(await send({ from: 'bo@remote.example', to: 'support@acme.example', subject: 'RE: [ext] AW: Quarterly  numbers', text: 'b' }));
    const stranger = await settled(await send({ from: 'cy@elsewhere.example', to: 'support@acme.example', subject: 'Re: Quarterly numbers', text: 'c' }));
    expect(again.threadId).toBe(first.threadId);
    expect(again.inReplyToId).toBeNull();
    expect(stranger.threadId).not.toBe(first.threadId);
  }, 60_000);

  it('threads a reply to an outbound message recorded by the send pipeline', async () => {
    const outbound = await inbox().transactional((em) =>
      recordOutboundMessage(em, {
        orgId,
        emailId: 'aaaaaaaaaaaaaaaaaaaaaaaa',
        rfcMessageId: '<aaaaaaaaaaaaaaaaaaaaaaaa.0@acme.example>',
        subject: 'Your invoice',
        text: 'Attached.',
        html: null,
        from: { email: 'billing@acme.example', name: 'Billing' },
        to: [{ email: 'dee@remote.example', name: '' }],
        cc: [],
        inReplyTo: null,
        references: [],
        attachmentCount: 1,
        createdAt: new Date(),
      }),
    );
    expect(outbound).toMatchObject({ direction: 'outbound', attachmentIngestStatus: 'unavailable', attachmentsReady: true, attachmentCount: 1 });
    const reply = await settled(
      await send({ from: 'dee@remote.example', to: 'billing@acme.example', subject: 'Re: Your invoice', text: 'Thanks', inReplyTo: '<aaaaaaaaaaaaaaaaaaaaaaaa.0@acme.example>' }),
    );
    expect(reply.threadId).toBe(outbound.threadId);
    expect(reply.inReplyToId).toBe(outbound.id);
  }, 60_000);

  it('records one message per workspace reached, each with its own stored attachments', async () => {
    const content = randomBytes(50_000);
    const inboundId = await send({
      from: 'both@remote.example',
      to: ['support@acme.example', 'team@other.example'],
      subject: 'Two workspaces',
      text: 'hi',
      attachments: [{ filename: 'shared.bin', content }],
    });
    const [mine, theirs] = await Promise.all([settled(inboundId, orgId), settled(inboundId, otherOrgId)]);
    expect(mine.id).not.toBe(theirs.id);
    for (const [org, message] of [[orgId, mine], [otherOrgId, theirs]] as const) {
      const [attachment] = await inbox(org).find(InboxAttachment, { messageId: message.id });
      expect(attachment?.blobKey).toBe(`inbox/${org}/${message.id}/0`);
      expect((await readBlob(blobs(), attachment!.blobKey!)).equals(content)).toBe(true);
    }
  }, 60_000);

  it.each(['inbound-malformed-broken-mime', 'inbound-malformed-no-headers', 'inbound-malformed-bad-encodings'])(
    'stores and lists a malformed message (%s) rather than dropping it',
    async (fixture) => {
      const raw = await readFile(new URL(`${fixture}.eml`, FIXTURES));
      const inboundId = await send({ envelope: { from: 'odd@remote.example', to: 'support@acme.example' }, raw });
      const message = await settled(inboundId);
      expect(message.direction).toBe('inbound');
      expect(['ready', 'partial_failure']).toContain(message.attachmentIngestStatus);
      expect((await ingested(inboundId)).status).toBe('ingested');
      const listed = await inbox().find(InboxMessage, {}, { orderBy: { updatedAt: 'asc', id: 'asc' } });
      expect(listed.map((m) => m.id)).toContain(message.id);
      if (fixture === 'inbound-malformed-broken-mime') {
        expect(message.subject).toBe('broken mime structure');
        expect(message.text).toContain('The text part survives.');
      }
      if (fixture === 'inbound-malformed-no-headers') expect(message.fromEmail).toBe('');
    },
    60_000,
  );
  it('keeps SPF, DKIM and DMARC results of a signed message', async () => {
    const signed = createTransport({
      host: '127.0.0.1',
      port: smtp.port,
      secure: false,
      ignoreTLS: true,
      dkim: { domainName: 'signed.example', keySelector: 'mail', privateKey: dkimKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
    });
    const info = (await signed.sendMail({ from: 'news@signed.example', to: 'support@acme.example', subject: 'Signed', text: 'trust me' })) as SentMessageInfo;
    const message = await settled(/queued as ([a-f0-9]{24})/.exec(info.response ?? '')![1]!);
    expect(message.authResults).toMatchObject({
      spf: { result: 'pass', domain: 'signed.example' },
      dkim: { result: 'pass', signatures: [{ domain: 'signed.example', selector: 'mail', result: 'pass' }] },
      dmarc: { result: 'pass', policy: 'reject' },
    });
  }, 60_000);

  it('records the message with temperror results when DNS does not answer', async () => {
    dns.setSilent(true);
    try {
      const message = await settled(await send({ from: 'news@signed.example', to: 'support@acme.example', subject: 'DNS down', text: 'x' }));
      expect(message.authResults).toMatchObject({ spf: { result: 'temperror' } });
      expect(message.attachmentIngestStatus).toBe('ready');
    } finally {
      dns.setSilent(false);
    }
  }, 60_000);

  it('routes a DSN to a VERP bounce address to the workspace of the email it names, as kind bounce', async () => {
    const domain = await inbox().findOneOrFail(Domain, { domain: 'acme.example' });
    const email = inbox().create(TransactionalEmail, {
      orgId,
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
    await inbox().persist(email).flush();
    const raw = await readFile(new URL('inbound-dsn-hard-bounce-to-verp.eml', FIXTURES));
    const inboundId = await send({ envelope: { from: '', to: `bounce+${email.id}@bounces.ingest.test` }, raw });
    const message = await settled(inboundId);
    expect(message).toMatchObject({ subject: 'Undelivered Mail Returned to Sender', kind: 'bounce' });
    expect(await stack.orm.em.fork().count(InboxMessage, { inboundId }, { filters: false })).toBe(1);
    // Reports are not inbound mail for subscribers: no email.received.
    const received = (await inbox().find(Event, { type: 'email.received' })).filter(
      (event) => (event.data as { message: { id: string } }).message.id === message.id,
    );
    expect(received).toEqual([]);
  }, 60_000);

  it('marks a message no workspace owns any more as failed, with the reason', async () => {
    const inboundId = await send({ envelope: { from: 'x@remote.example', to: 'bounce+0123456789abcdef01234567@bounces.ingest.test' }, raw: 'Subject: nobody\r\n\r\nx\r\n' });
    const row = await ingested(inboundId);
    expect(row).toMatchObject({ status: 'failed', lastError: 'no workspace owns any recipient' });
  }, 60_000);
});
