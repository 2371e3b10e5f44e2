import { randomBytes } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Event, InboundMessage, InboxAttachment, InboxMessage } from '../../db/entities/index.ts';
import { readBlob } from '../../src/blob/blob-store.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { AttachmentsIncompleteError } from '../../src/modules/inbound/attachments.ts';
import { createInboundIngestion } from '../../src/modules/inbound/ingestion.ts';
import { connectTemporalClient } from '../../src/temporal/client.ts';
import { HeraldKind, HeraldOrgId, PLATFORM_ORG_ID } from '../../src/temporal/search-attributes.ts';
import { INBOUND_INTAKE_KIND, INBOUND_INTAKE_WORKFLOW, inboundIntakeWorkflowId } from '../../workflows/inbound-intake.ts';
import { INBOUND_FIXTURES, startInboundHarness, type InboundHarness } from './inbound-harness.ts';

/**
 * Ingestion of what arrives over real SMTP: the steps and their states (pending → ready or
 * partial_failure), attachments stored byte for byte, email.received, several workspaces,
 * malformed mail. The first tests drive the ingestion steps directly, before a worker runs.
 */
describe('inbound ingestion (real SMTP → blob store → Temporal → worker)', () => {
  let h: InboundHarness;

  beforeAll(async () => {
    h = await startInboundHarness();
  }, 60_000);

  afterAll(async () => {
    await h.close();
  });

  const files = [
    { filename: 'report.pdf', content: randomBytes(300_000), contentType: 'application/pdf' },
    { filename: 'photo.jpg', content: randomBytes(1_200_000), contentType: 'image/jpeg' },
    { filename: 'notes.txt', content: Buffer.from('plain notes\r\nline two\r\n'), contentType: 'text/plain' },
  ];

  it('records the message pending with its attachment count, then stores the attachments and turns ready (activity steps)', async () => {
    const inboundId = await h.send({
      from: 'Client <client@remote.example>',
      to: 'support@acme.example',
      subject: 'Steps',
      text: 'body',
      attachments: files,
    });
    const ingestion = createInboundIngestion({ orm: h.stack.orm, blobs: h.blobs(), config: h.stack.config });
    const recorded = await ingestion.recordMessages(inboundId);
    expect(recorded).toMatchObject({ status: 'recorded', orgIds: [h.orgId], attachmentsPending: true });
    const pending = await h.inbox().findOneOrFail(InboxMessage, { inboundId });
    expect(pending).toMatchObject({ attachmentIngestStatus: 'pending', attachmentsReady: false, attachmentCount: 3, kind: 'message' });
    // A retry of the step creates nothing twice.
    await ingestion.recordMessages(inboundId);
    expect(await h.inbox().count(InboxMessage, { inboundId })).toBe(1);

    await ingestion.storeAttachments(inboundId, { final: false });
    const ready = await h.inbox().findOneOrFail(InboxMessage, { inboundId });
    expect(ready).toMatchObject({ attachmentIngestStatus: 'ready', attachmentsReady: true, failedAttachments: [] });
    expect(ready.updatedAt.getTime()).toBeGreaterThan(pending.updatedAt.getTime());
    await ingestion.storeAttachments(inboundId, { final: false });
    expect(await h.inbox().count(InboxAttachment, { messageId: ready.id })).toBe(3);
    await ingestion.markIngested(inboundId);
  });

  it('settles partial_failure, naming the attachment that could not be stored, on the final attempt only', async () => {
    const inboundId = await h.send({
      from: 'client@remote.example',
      to: 'support@acme.example',
      subject: 'Partial',
      text: 'body',
      attachments: files,
    });
    const ingestion = createInboundIngestion({ orm: h.stack.orm, blobs: h.blobs(), config: h.stack.config });
    await ingestion.recordMessages(inboundId);
    const pending = await h.inbox().findOneOrFail(InboxMessage, { inboundId });
    // A directory where attachment 1's blob goes: that one write fails, the others succeed.
    await mkdir(join(h.blobDir, 'inbox', h.orgId, pending.id, '1', 'blocked'), { recursive: true });

    await expect(ingestion.storeAttachments(inboundId, { final: false })).rejects.toBeInstanceOf(AttachmentsIncompleteError);
    expect(await h.inbox().findOneOrFail(InboxMessage, { inboundId })).toMatchObject({
      attachmentIngestStatus: 'pending',
      attachmentsReady: false,
    });
    expect((await h.inbox().find(InboxAttachment, { messageId: pending.id })).map((a) => a.position).sort()).toEqual([0, 2]);

    await ingestion.storeAttachments(inboundId, { final: true });
    expect(await h.inbox().findOneOrFail(InboxMessage, { inboundId })).toMatchObject({
      attachmentIngestStatus: 'partial_failure',
      attachmentsReady: true,
      failedAttachments: [{ filename: 'photo.jpg', reason: 'ingest_failed' }],
    });
    await ingestion.markIngested(inboundId);
  });

  it('settles what is still pending when ingestion is marked failed, so nothing stays pending', async () => {
    const inboundId = await h.send({
      from: 'client@remote.example',
      to: 'support@acme.example',
      subject: 'Gives up',
      text: 'body',
      attachments: files.slice(0, 1),
    });
    const ingestion = createInboundIngestion({ orm: h.stack.orm, blobs: h.blobs(), config: h.stack.config });
    await ingestion.recordMessages(inboundId);
    await ingestion.markFailed(inboundId, 'disk on fire');
    expect(await h.inbox().findOneOrFail(InboxMessage, { inboundId })).toMatchObject({
      attachmentIngestStatus: 'partial_failure',
      attachmentsReady: true,
      failedAttachments: [{ filename: 'attachment-1', reason: 'ingest_failed' }],
    });
    expect(await h.stack.orm.em.fork().findOneOrFail(InboundMessage, { id: inboundId })).toMatchObject({
      status: 'failed',
      lastError: 'disk on fire',
    });
  });

  it('retries when applying a bounce report fails, and on the final attempt records the message without it', async () => {
    const inboundId = await h.send({
      from: 'MAILER-DAEMON@remote.example',
      to: 'support@acme.example',
      subject: 'Delivery failure',
      text: 'gone',
    });
    const ingestion = createInboundIngestion({
      orm: h.stack.orm,
      blobs: h.blobs(),
      config: h.stack.config,
      reports: {
        classify: () => Promise.resolve({ kind: 'bounce' as const }),
        apply: async (em) => {
          await em.execute('select 1 / 0');
          return {};
        },
      },
    });
    await expect(ingestion.recordMessages(inboundId)).rejects.toThrow(/division by zero/);
    expect(await h.inbox().count(InboxMessage, { inboundId })).toBe(0);

    await ingestion.recordMessages(inboundId, { final: true });
    expect(await h.inbox().findOneOrFail(InboxMessage, { inboundId })).toMatchObject({ kind: 'bounce', attachmentIngestStatus: 'ready' });
    await ingestion.markIngested(inboundId);
  });

  it('ingests a message with 3 attachments end to end: ready, bytes identical, email.received written', async () => {
    await h.startWorker();
    const inboundId = await h.send({
      from: 'Client <client@remote.example>',
      to: ['support@acme.example'],
      cc: ['Someone <someone@remote.example>'],
      subject: 'Three attachments',
      text: 'See attached.',
      html: '<p>See attached.</p>',
      messageId: '<three-attachments@remote.example>',
      attachments: files,
    });
    const message = await h.settled(inboundId);
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
    expect(message.authResults).toMatchObject({
      spf: { result: expect.any(String) as unknown },
      dkim: { result: 'none' },
      dmarc: { result: expect.any(String) as unknown },
    });

    const attachments = await h.inbox().find(InboxAttachment, { messageId: message.id }, { orderBy: { position: 'asc' } });
    expect(attachments.map((a) => [a.position, a.filename, a.contentType, a.status])).toEqual([
      [0, 'report.pdf', 'application/pdf', 'stored'],
      [1, 'photo.jpg', 'image/jpeg', 'stored'],
      [2, 'notes.txt', 'text/plain', 'stored'],
    ]);
    for (const [index, attachment] of attachments.entries()) {
      expect(attachment.blobKey).toBe(`inbox/${h.orgId}/${message.id}/${index}`);
      const bytes = await readBlob(h.blobs(), attachment.blobKey!);
      expect(bytes.equals(files[index]!.content), `attachment ${index} differs`).toBe(true);
      expect(attachment.sizeBytes).toBe(files[index]!.content.length);
    }

    const events = await h.inbox().find(Event, { type: 'email.received' });
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
    expect((await h.ended(inboundId)).status).toBe('ingested');

    const temporal = await connectTemporalClient(h.stack.config);
    try {
      // One actor for every message and workspace, filed under the platform.
      const actor = temporal.client.workflow.getHandle(inboundIntakeWorkflowId(h.stack.config.temporal.schedulePrefix));
      const described = await actor.describe();
      expect(described.type).toBe(INBOUND_INTAKE_WORKFLOW);
      expect(described.taskQueue).toBe(h.stack.config.temporal.taskQueue);
      expect(described.typedSearchAttributes.get(HeraldKind)).toBe(INBOUND_INTAKE_KIND);
      expect(described.typedSearchAttributes.get(HeraldOrgId)).toBe(PLATFORM_ORG_ID);
      await waitFor(
        'a drain of the inbound actor to complete',
        async () => {
          const { events } = await actor.fetchHistory();
          return events?.some((event) => event.activityTaskCompletedEventAttributes) ? true : undefined;
        },
        30_000,
        200,
      );
    } finally {
      await temporal.close();
    }
  }, 90_000);

  it('records one message per workspace reached, each with its own stored attachments', async () => {
    const content = randomBytes(50_000);
    const inboundId = await h.send({
      from: 'both@remote.example',
      to: ['support@acme.example', 'team@other.example'],
      subject: 'Two workspaces',
      text: 'hi',
      attachments: [{ filename: 'shared.bin', content }],
    });
    const [mine, theirs] = await Promise.all([h.settled(inboundId, h.orgId), h.settled(inboundId, h.otherOrgId)]);
    expect(mine.id).not.toBe(theirs.id);
    for (const [org, message] of [
      [h.orgId, mine],
      [h.otherOrgId, theirs],
    ] as const) {
      const [attachment] = await h.inbox(org).find(InboxAttachment, { messageId: message.id });
      expect(attachment?.blobKey).toBe(`inbox/${org}/${message.id}/0`);
      expect((await readBlob(h.blobs(), attachment!.blobKey!)).equals(content)).toBe(true);
    }
  }, 60_000);

  it.each(['inbound-malformed-broken-mime', 'inbound-malformed-no-headers', 'inbound-malformed-bad-encodings'])(
    'stores and lists a malformed message (%s) rather than dropping it',
    async (fixture) => {
      const raw = await readFile(new URL(`${fixture}.eml`, INBOUND_FIXTURES));
      const inboundId = await h.send({ envelope: { from: 'odd@remote.example', to: 'support@acme.example' }, raw });
      const message = await h.settled(inboundId);
      expect(message.direction).toBe('inbound');
      expect(['ready', 'partial_failure']).toContain(message.attachmentIngestStatus);
      expect((await h.ended(inboundId)).status).toBe('ingested');
      const listed = await h.inbox().find(InboxMessage, {}, { orderBy: { updatedAt: 'asc', id: 'asc' } });
      expect(listed.map((m) => m.id)).toContain(message.id);
      if (fixture === 'inbound-malformed-broken-mime') {
        expect(message.subject).toBe('broken mime structure');
        expect(message.text).toContain('The text part survives.');
      }
      if (fixture === 'inbound-malformed-no-headers') expect(message.fromEmail).toBe('');
    },
    60_000,
  );

  it('keeps a large html-only body (too large to convert to text) rather than dropping it', async () => {
    const html = `<html><body>${'<p>a long newsletter paragraph</p>\n'.repeat(100_000)}</body></html>`;
    const message = await h.settled(await h.send({ from: 'news@remote.example', to: 'support@acme.example', subject: 'Big html', html }));
    expect(message.html?.length).toBeGreaterThan(3_000_000);
    expect(message.html).toContain('a long newsletter paragraph');
  }, 60_000);
});
