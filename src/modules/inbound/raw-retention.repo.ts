/**
 * The raw-message retention's read (retention.ts). Raw messages belong to no workspace, so no
 * statement here needs the workspace condition.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

/** A raw message whose bytes are due for deletion. */
export interface ExpiredRawMessage {
  id: string;
  blob_key: string;
}

/**
 * Reads and row-locks (FOR UPDATE SKIP LOCKED) up to `batchSize` ingested raw messages received
 * before `cutoff` whose bytes are still kept, oldest first.
 */
export async function claimExpiredRawMessages(em: EntityManager, cutoff: Date, batchSize: number): Promise<ExpiredRawMessage[]> {
  return em.getConnection().execute<ExpiredRawMessage[]>(
    `select id, blob_key from inbound_messages
        where status = 'ingested' and raw_deleted_at is null and created_at < ?
        order by created_at limit ? for update skip locked`,
    [cutoff, batchSize],
  );
}
