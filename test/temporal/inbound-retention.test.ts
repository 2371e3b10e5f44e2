import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InboundMessage, InboxAttachment } from '../../db/entities/index.ts';
import { readBlob } from '../../src/blob/blob-store.ts';
import { createBlobStore } from '../../src/blob/open-blob-store.ts';
import { deleteExpiredRawMessages } from '../../src/modules/inbound/retention.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { inboundRawCleanupScheduleId } from '../../src/temporal/schedules.ts';
import type { cleanupInboundRaw } from '../../workflows/index.ts';
import { startInboundHarness, type InboundHarness } from './inbound-harness.ts';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/**
 * Raw inbound messages past INBOUND_RAW_RETENTION_DAYS (30 here) lose their raw bytes through
 * the cleanupInboundRaw workflow on the real worker; their inbox messages and attachments stay.
 */
describe('raw inbound message retention', () => {
  let h: InboundHarness;
  let temporal: TemporalClientHandle;

  /** A message received over SMTP and ingested, then dated `ageMs` back (and given `status`). */
  async function receivedAgo(ageMs: number, options: { status?: 'ingested' | 'failed'; attachment?: boolean } = {}) {
    const inboundId = await h.send({
      from: 'client@remote.example',
      to: 'support@acme.example',
      subject: `aged ${ageMs}`,
      text: 'body',
      ...(options.attachment ? { attachments: [{ filename: 'kept.txt', content: 'attachment bytes' }] } : {}),
    });
    await h.settled(inboundId);
    const row = await h.ended(inboundId);
    await h.stack.orm.em
      .fork()
      .nativeUpdate(InboundMessage, { id: inboundId }, { createdAt: new Date(Date.now() - ageMs), status: options.status ?? row.status });
    return { inboundId, blobKey: row.blobKey };
  }

  async function runCleanup(): Promise<{ deleted: number }> {
    return temporal.client.workflow.execute<typeof cleanupInboundRaw>('cleanupInboundRaw', {
      taskQueue: h.stack.config.temporal.taskQueue,
      workflowId: `test-cleanup-inbound-raw-${Date.now()}`,
    });
  }

  const rawOf = (inboundId: string) => h.stack.orm.em.fork().findOneOrFail(InboundMessage, { id: inboundId });
  const blobs = async () => (await createBlobStore(h.stack.config))!;

  beforeAll(async () => {
    h = await startInboundHarness({ INBOUND_RAW_RETENTION_DAYS: '30' });
    await h.startWorker();
    temporal = await connectTemporalClient(h.stack.config);
  });

  afterAll(async () => {
    await temporal.client.schedule
      .getHandle(inboundRawCleanupScheduleId(h.stack.config))
      .delete()
      .catch(() => {});
    await temporal.close();
    await h.close();
  });

  it('deletes the raw bytes of messages ingested more than 30 days ago, keeps younger, failed ones and the inbox', async () => {
    const old = await receivedAgo(30 * DAY + MINUTE, { attachment: true });
    const young = await receivedAgo(30 * DAY - 10 * MINUTE);
    const failed = await receivedAgo(40 * DAY, { status: 'failed' });

    const result = await runCleanup();
    expect(result.deleted).toBe(1);

    expect(await (await blobs()).exists(old.blobKey)).toBe(false);
    expect((await rawOf(old.inboundId)).rawDeletedAt).toBeInstanceOf(Date);
    for (const kept of [young, failed]) {
      expect(await (await blobs()).exists(kept.blobKey)).toBe(true);
      expect((await rawOf(kept.inboundId)).rawDeletedAt).toBeNull();
    }
    // The inbox message of the old one still has its stored attachment, byte for byte.
    const message = await h.settled(old.inboundId);
    expect(message.text.trim()).toBe('body');
    const [attachment] = await h.inbox().find(InboxAttachment, { messageId: message.id });
    expect(attachment?.status).toBe('stored');
    expect((await readBlob(await blobs(), attachment!.blobKey!)).toString()).toBe('attachment bytes');

    // A second run finds nothing left to delete.
    expect((await runCleanup()).deleted).toBe(0);
  }, 120_000);

  it('keeps everything when the retention is 0 (INBOUND_RAW_RETENTION_DAYS=0)', async () => {
    const old = await receivedAgo(400 * DAY);
    expect(await deleteExpiredRawMessages(h.stack.orm, await blobs(), { retentionMs: 0, batchSize: 100 })).toEqual({ deleted: 0 });
    expect(await (await blobs()).exists(old.blobKey)).toBe(true);
    // With a retention set, the same message goes: the setting alone decided.
    expect(await deleteExpiredRawMessages(h.stack.orm, await blobs(), { retentionMs: 30 * DAY, batchSize: 100 })).toEqual({ deleted: 1 });
    expect(await (await blobs()).exists(old.blobKey)).toBe(false);
  }, 60_000);

  it('is on a daily Temporal Schedule on the inbound task queue, created by the worker', async () => {
    const schedule = await temporal.client.schedule.getHandle(inboundRawCleanupScheduleId(h.stack.config)).describe();
    expect(schedule.action).toMatchObject({
      type: 'startWorkflow',
      workflowType: 'cleanupInboundRaw',
      taskQueue: h.stack.config.temporal.taskQueue,
    });
    expect(schedule.spec.intervals?.[0]?.every).toBe(DAY);
  });
});
