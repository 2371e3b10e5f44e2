/**
 * The first statement of the transaction that records a raw message's inbox message in one
 * workspace (record-inbox-message.ts), one round trip for three things.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { THREAD_LOCK_SQL, threadLockKey } from '../inbox/threading.ts';
import { MARK_INGESTED_SQL } from './inbound-queue.repo.ts';

export interface BeginRecording {
  inboundId: string;
  orgId: string;
  /** The message's normalised subject and participants: its conversation's thread lock (lockWorkspaceThreads). */
  thread: { subject: string; participants: readonly string[] };
  /** This transaction is the raw message's last step: mark it ingested in it. */
  settlesRaw: boolean;
}

/**
 * Marks the raw message ingested when `settlesRaw`, takes the conversation's thread lock until
 * the transaction ends (as src/modules/inbox/thread-placement.repo.ts lockWorkspaceThreads),
 * and answers the id of the inbox message an earlier attempt recorded in this workspace, if any.
 */
export async function beginRecording(em: EntityManager, input: BeginRecording): Promise<string | null> {
  const [row] = await em.execute<{ existing_id: string | null }[]>(
    `with settled as (${MARK_INGESTED_SQL} where id = :inboundId and :settlesRaw)
     select ${THREAD_LOCK_SQL},
            (select id from inbox_messages where org_id = :orgId and inbound_id = :inboundId) as existing_id`,
    {
      inboundId: input.inboundId,
      orgId: input.orgId,
      settlesRaw: input.settlesRaw,
      threadLock: threadLockKey(input.orgId, input.thread),
    },
  );
  return row?.existing_id ?? null;
}
