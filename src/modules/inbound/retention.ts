import type { MikroORM } from '@mikro-orm/postgresql';
import { InboundMessage } from '../../../db/entities/index.ts';
import type { BlobStore } from '../../blob/blob-store.ts';
import { claimExpiredRawMessages } from './raw-retention.repo.ts';

export interface RawRetentionInput {
  /** Raw bytes of messages ingested longer ago than this are deleted; 0 keeps them forever. */
  retentionMs: number;
  batchSize: number;
  now?: Date;
}

/**
 * Deletes the raw bytes of one batch of inbound messages ingested more than `retentionMs` ago
 * and marks their rows (`raw_deleted_at`); the rows, inbox messages and stored attachments
 * stay. Messages still being ingested or that failed keep their raw bytes (an operator may
 * need them). Rows are claimed with SKIP LOCKED, so overlapping runs share the work, and a
 * retry after a crash deletes again what it had deleted (a missing blob is no error).
 * Returns how many it handled: fewer than `batchSize` means none are left.
 */
export async function deleteExpiredRawMessages(orm: MikroORM, blobs: BlobStore, input: RawRetentionInput): Promise<{ deleted: number }> {
  if (input.retentionMs <= 0) return { deleted: 0 };
  const now = input.now ?? new Date();
  const cutoff = new Date(now.getTime() - input.retentionMs);
  return orm.em.fork().transactional(async (em) => {
    const rows = await claimExpiredRawMessages(em, cutoff, input.batchSize);
    for (const row of rows) await blobs.delete(row.blob_key);
    if (rows.length > 0) {
      await em.nativeUpdate(InboundMessage, { id: { $in: rows.map((row) => row.id) } }, { rawDeletedAt: now, updatedAt: now });
    }
    return { deleted: rows.length };
  });
}
