import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@temporalio/client';
import { AttachmentUpload, TransactionalEmail, type EmailStatus } from '../../db/entities/index.ts';
import { newId } from '../../db/ids.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import type { BlobStore } from '../../src/blob/blob-store.ts';
import { createBlobStore } from '../../src/blob/open-blob-store.ts';
import { createLogger } from '../../src/logger.ts';
import { attemptBlobKey, reservedBlobKey } from '../../src/modules/attachments/attachments.fns.ts';
import { createAttachmentsServiceFromConfig } from '../../src/modules/attachments/attachments.service.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { cleanupScheduleId, domainRecheckScheduleId, uploadsCleanupScheduleId } from '../../src/temporal/schedules.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { createOrg } from '../support/factories.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

describe('cleanupUploads: deleting attachment uploads nobody uses', () => {
  let stack: TestStack;
  let blobDir: string;
  let blobs: BlobStore;
  let temporal: TemporalClientHandle;
  let client: Client;
  let worker: RunningWorker | undefined;
  let orgId: string;
  const logger = createLogger('warn');

  /** An upload created `ageMs` ago (bytes stored unless pending), last referenced `referencedAgoMs` ago. */
  async function insertUpload(options: { ageMs: number; referencedAgoMs?: number; status?: 'pending' | 'uploaded'; org?: string }) {
    const org = options.org ?? orgId;
    const id = newId();
    const uploaded = (options.status ?? 'uploaded') === 'uploaded';
    const blobKey = uploaded ? attemptBlobKey(org, id, 'a1b2c3') : reservedBlobKey(org, id);
    if (uploaded) await blobs.put(blobKey, Buffer.from(`bytes of ${id}`));
    const em = scopeToOrg(stack.orm.em, org);
    const createdAt = new Date(Date.now() - options.ageMs);
    em.create(AttachmentUpload, {
      id,
      orgId: org,
      filename: 'file.pdf',
      contentType: 'application/pdf',
      sizeBytes: 10,
      status: uploaded ? 'uploaded' : 'pending',
      blobKey,
      sha256: null,
      expiresAt: new Date(createdAt.getTime() + HOUR),
      uploadedAt: uploaded ? createdAt : null,
      referencedAt: options.referencedAgoMs === undefined ? null : new Date(Date.now() - options.referencedAgoMs),
    });
    await em.flush();
    await em.nativeUpdate(AttachmentUpload, { id }, { createdAt });
    return { id, blobKey };
  }

  /** A transactional email of the workspace in `status` that carries the given uploads. */
  async function insertEmail(status: EmailStatus, attachmentIds: string[], org = orgId) {
    const em = scopeToOrg(stack.orm.em, org);
    const id = newId();
    em.create(TransactionalEmail, {
      id,
      orgId: org,
      domainId: newId(),
      domain: 'example.com',
      fromEmail: 'hi@example.com',
      subject: 'Attached',
      messageId: `${id}.0@example.com`,
      status,
      quotaDay: '2026-11-21',
      attachments: [
        { filename: 'inline.txt', content_type: 'text/plain', size_bytes: 3, content_id: null, blob_key: null, attachment_id: null },
        ...attachmentIds.map((attachmentId) => ({
          filename: 'file.pdf',
          content_type: 'application/pdf',
          size_bytes: 10,
          content_id: null,
          blob_key: null,
          attachment_id: attachmentId,
        })),
      ],
    });
    await em.flush();
  }

  async function remaining(): Promise<Set<string>> {
    const rows = await stack.orm.em.fork().find(AttachmentUpload, {}, ALL_TENANTS);
    return new Set(rows.map((row) => row.id));
  }

  beforeAll(async () => {
    installTemporalLogging(logger);
    blobDir = await mkdtemp(join(tmpdir(), 'herald-cleanup-uploads-'));
    stack = await createTestStack({ BLOB_DIR: blobDir });
    blobs = (await createBlobStore(stack.config))!;
    temporal = await connectTemporalClient(stack.config);
    client = temporal.client;
    orgId = (await createOrg(stack.orm)).org.id;
  });

  afterAll(async () => {
    await worker?.shutdown();
    for (const id of [uploadsCleanupScheduleId(stack.config), cleanupScheduleId(stack.config), domainRecheckScheduleId(stack.config)]) {
      await client.schedule
        .getHandle(id)
        .delete()
        .catch(() => {});
    }
    await temporal.close();
    await stack.close();
    await rm(blobDir, { recursive: true, force: true });
  });

  it('runs on the worker: deletes stale unreferenced uploads (blob and row), keeps recent ones and those an open email reads', async () => {
    const otherOrg = (await createOrg(stack.orm)).org.id;
    const staleUploaded = await insertUpload({ ageMs: 2 * HOUR });
    const stalePending = await insertUpload({ ageMs: 2 * HOUR, status: 'pending' });
    const staleReferencedLongAgo = await insertUpload({ ageMs: 3 * HOUR, referencedAgoMs: 2 * HOUR });
    const readBySettledEmail = await insertUpload({ ageMs: 3 * HOUR, referencedAgoMs: 2 * HOUR });
    const readByAnotherWorkspacesEmail = await insertUpload({ ageMs: 3 * HOUR, referencedAgoMs: 2 * HOUR });
    const recent = await insertUpload({ ageMs: 10 * MINUTE });
    const recentPending = await insertUpload({ ageMs: 10 * MINUTE, status: 'pending' });
    const recentlyReferenced = await insertUpload({ ageMs: 3 * HOUR, referencedAgoMs: 10 * MINUTE });
    const readByQueued = await insertUpload({ ageMs: 3 * HOUR, referencedAgoMs: 2 * HOUR });
    const readByScheduled = await insertUpload({ ageMs: 3 * HOUR, referencedAgoMs: 2 * HOUR });
    const readBySending = await insertUpload({ ageMs: 3 * HOUR, referencedAgoMs: 2 * HOUR, org: otherOrg });
    await insertEmail('queued', [readByQueued.id]);
    await insertEmail('scheduled', [recent.id, readByScheduled.id]);
    await insertEmail('sending', [readBySending.id], otherOrg);
    await insertEmail('sent', [readBySettledEmail.id]);
    await insertEmail('failed', [readBySettledEmail.id]);
    await insertEmail('queued', [readByAnotherWorkspacesEmail.id], otherOrg);

    worker = await startWorker(stack.config, logger);
    const result = await client.workflow.execute('cleanupUploads', {
      taskQueue: stack.config.temporal.taskQueue,
      workflowId: `cleanup-uploads-test-${stack.id}`,
      args: [{ retentionMs: HOUR }],
      workflowExecutionTimeout: '2 minutes',
    });

    const deleted = [staleUploaded, stalePending, staleReferencedLongAgo, readBySettledEmail, readByAnotherWorkspacesEmail];
    const kept = [recent, recentPending, recentlyReferenced, readByQueued, readByScheduled, readBySending];
    expect(result).toEqual({ deleted: deleted.length });
    const left = await remaining();
    for (const upload of deleted) {
      expect(left.has(upload.id), upload.id).toBe(false);
      expect(await blobs.exists(upload.blobKey), upload.blobKey).toBe(false);
    }
    for (const upload of kept) {
      expect(left.has(upload.id), upload.id).toBe(true);
      if (upload !== recentPending) expect(await blobs.exists(upload.blobKey), upload.blobKey).toBe(true);
    }
    expect(left.size).toBe(kept.length);
  }, 180_000);

  it('is on an hourly Temporal Schedule on the email task queue, created by the worker', async () => {
    const schedule = await client.schedule.getHandle(uploadsCleanupScheduleId(stack.config)).describe();
    expect(schedule.action).toMatchObject({
      type: 'startWorkflow',
      workflowType: 'cleanupUploads',
      taskQueue: stack.config.temporal.taskQueue,
    });
    expect(schedule.spec.intervals).toMatchObject([{ every: HOUR }]);
    expect(schedule.typedSearchAttributes.getAll().map((pair) => [pair.key.name, pair.value])).toEqual(
      expect.arrayContaining([
        ['HeraldOrgId', 'platform'],
        ['HeraldKind', 'maintenance'],
      ]),
    );
  });

  it('keeps uploads for 7 days by default', async () => {
    const eightDays = await insertUpload({ ageMs: 8 * DAY });
    const sixDays = await insertUpload({ ageMs: 6 * DAY });
    const pendingEightDays = await insertUpload({ ageMs: 8 * DAY, status: 'pending' });
    const referencedSixDaysAgo = await insertUpload({ ageMs: 30 * DAY, referencedAgoMs: 6 * DAY });
    const { deleted } = await createAttachmentsServiceFromConfig(stack.orm, stack.config, blobs).deleteStaleUploads();
    expect(deleted).toBe(2);
    const left = await remaining();
    expect([eightDays, sixDays, pendingEightDays, referencedSixDaysAgo].map((u) => left.has(u.id))).toEqual([false, true, false, true]);
    await stack.orm.em.fork().nativeDelete(AttachmentUpload, { id: { $in: [sixDays.id, referencedSixDaysAgo.id] } }, ALL_TENANTS);
  });

  it('deletes in batches of the size asked for', async () => {
    const service = createAttachmentsServiceFromConfig(stack.orm, stack.config, blobs);
    const stale = await Promise.all(Array.from({ length: 5 }, () => insertUpload({ ageMs: 2 * HOUR })));
    const counts = [];
    for (let i = 0; i < 4; i += 1) counts.push((await service.deleteStaleUploads({ retentionMs: HOUR, batchSize: 2 })).deleted);
    expect(counts).toEqual([2, 2, 1, 0]);
    const left = await remaining();
    expect(stale.some((upload) => left.has(upload.id))).toBe(false);
  });

  it('skips an upload whose row another transaction holds (a send referencing it), and takes it on the next run', async () => {
    const service = createAttachmentsServiceFromConfig(stack.orm, stack.config, blobs);
    const held = await insertUpload({ ageMs: 2 * HOUR });
    await stack.orm.em.fork().transactional(async (em) => {
      await em.execute('select id from attachment_uploads where id = ? for update', [held.id]);
      expect(await service.deleteStaleUploads({ retentionMs: HOUR })).toEqual({ deleted: 0 });
    });
    expect(await blobs.exists(held.blobKey)).toBe(true);
    expect(await service.deleteStaleUploads({ retentionMs: HOUR })).toEqual({ deleted: 1 });
    expect(await blobs.exists(held.blobKey)).toBe(false);
  });
});
