import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { BlobStore } from '../../blob/blob-store.ts';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import { retentionBatchDuration, retentionDeleted } from '../../metrics/metrics.ts';
import type { LoopSpec } from '../../queue/background-loop.ts';
import { idBefore, type RetentionKind } from './retention.fns.ts';
import {
  deleteDeliveredEvents,
  deleteEndedInvites,
  deleteEndedSessions,
  deleteExpiredIdempotencyRecords,
  deleteFinishedImports,
  deleteInboundMessages,
  deleteInboxMessages,
  deleteOrphanEmailEvents,
  deleteSettledDeliveries,
  deleteSettledEmails,
  type BatchResult,
} from './retention.repo.ts';

export type RetentionPolicy = Config['retention'];

/** One table's deletion: which setting governs it, and one batch of it. */
interface Sweep {
  /**
   * The kind whose period applies; `ended`: records that expire by themselves (idempotency
   * records, dashboard sessions and invitations), kept ENDED_KEPT_DAYS after their end.
   */
  kind: RetentionKind | 'ended';
  table: string;
  batch(em: EntityManager, beforeId: string, batchSize: number, now: Date): Promise<BatchResult>;
}

/** Days an ended session or invitation is kept (who signed in when, for an operator's questions). */
export const ENDED_KEPT_DAYS = 30;

const endedBefore = (now: Date) => new Date(now.getTime() - ENDED_KEPT_DAYS * 86_400_000);

/** In order: an email goes before its orphaned events are looked for, deliveries before their events, inbox messages before the inbound rows. */
const SWEEPS: readonly Sweep[] = [
  { kind: 'emails', table: 'transactional_emails', batch: deleteSettledEmails },
  { kind: 'emails', table: 'email_events', batch: deleteOrphanEmailEvents },
  { kind: 'webhooks', table: 'webhook_deliveries', batch: deleteSettledDeliveries },
  { kind: 'webhooks', table: 'events', batch: deleteDeliveredEvents },
  { kind: 'inbound', table: 'inbox_messages', batch: deleteInboxMessages },
  { kind: 'inbound', table: 'inbound_messages', batch: deleteInboundMessages },
  { kind: 'contactImports', table: 'contact_imports', batch: deleteFinishedImports },
  { kind: 'ended', table: 'idempotency_records', batch: (em, _beforeId, size, now) => deleteExpiredIdempotencyRecords(em, now, size) },
  {
    kind: 'ended',
    table: 'dashboard_sessions',
    batch: (em, beforeId, size, now) => deleteEndedSessions(em, beforeId, size, endedBefore(now)),
  },
  {
    kind: 'ended',
    table: 'dashboard_invites',
    batch: (em, beforeId, size, now) => deleteEndedInvites(em, beforeId, size, endedBefore(now)),
  },
];

/** Blobs deleted at once within a batch. */
const BLOB_DELETE_CONCURRENCY = 8;

async function deleteBlobs(blobs: BlobStore | null, keys: readonly string[]): Promise<void> {
  if (!blobs) return;
  for (let i = 0; i < keys.length; i += BLOB_DELETE_CONCURRENCY) {
    await Promise.all(keys.slice(i, i + BLOB_DELETE_CONCURRENCY).map((key) => blobs.delete(key)));
  }
}

export interface RetentionDeps {
  orm: MikroORM;
  /** Where inbound messages, their attachments and import files are (null: no blob store configured). */
  blobs: BlobStore | null;
  policy: RetentionPolicy;
}

export interface RetentionRunOptions {
  now?: Date;
  /** Stops between two batches. */
  signal?: AbortSignal;
  /** Told of every batch: its table, rows deleted and how long its transaction took. */
  onBatch?: (table: string, deleted: number, transactionMs: number) => void;
}

/**
 * Deletes every record past its kind's period (RETENTION_*_DAYS, counted from creation; 0
 * keeps the kind forever) that is settled, in transactions of at most `batchSize` rows of the
 * table swept, until a batch comes back short. A batch's blobs are deleted inside its
 * transaction, before the commit: a failure leaves the rows (they are deleted again on the
 * next pass, a missing blob is no error), so no blob outlives its row unnoticed. Rows locked by
 * a writer are skipped, so several workers may run this at once. Returns rows deleted per table.
 */
export async function runRetention(deps: RetentionDeps, options: RetentionRunOptions = {}): Promise<Record<string, number>> {
  const now = options.now ?? new Date();
  const { batchSize, days } = deps.policy;
  const deleted: Record<string, number> = {};
  for (const sweep of SWEEPS) {
    const period = sweep.kind === 'ended' ? ENDED_KEPT_DAYS : days[sweep.kind];
    if (period <= 0) continue;
    const beforeId = idBefore(now, period);
    let swept = 0;
    for (;;) {
      if (options.signal?.aborted) break;
      const started = performance.now();
      const result = await deps.orm.em.fork().transactional(async (em) => {
        const batch = await sweep.batch(em, beforeId, batchSize, now);
        await deleteBlobs(deps.blobs, batch.blobKeys);
        return batch;
      });
      const transactionMs = performance.now() - started;
      retentionBatchDuration.observe({ table: sweep.table }, transactionMs / 1000);
      retentionDeleted.inc({ table: sweep.table }, result.deleted);
      options.onBatch?.(sweep.table, result.deleted, transactionMs);
      swept += result.deleted;
      if (result.deleted < batchSize) break;
    }
    deleted[sweep.table] = swept;
    if (options.signal?.aborted) break;
  }
  return deleted;
}

/**
 * The worker's retention loop: a pass at start and every `intervalMs` (default hourly) runs
 * `runRetention` to the end (or until the worker stops); logs what a pass deleted.
 */
export function createRetentionLoop(deps: RetentionDeps & { logger: Logger; intervalMs?: number }): LoopSpec {
  return {
    name: 'retention',
    intervalMs: deps.intervalMs ?? 3_600_000,
    async pass({ signal }): Promise<number> {
      const deleted = await runRetention(deps, { signal });
      const total = Object.values(deleted).reduce((sum, n) => sum + n, 0);
      if (total > 0) deps.logger.info('retention deleted expired records', { deleted });
      return total;
    },
  };
}
