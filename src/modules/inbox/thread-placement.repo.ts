import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../../db/ids.ts';
import { executePrepared } from '../../../db/prepared.ts';
import { addressDomainSql, type SqlFragment } from '../../../db/sql-fragment.ts';
import {
  normalizeSubject,
  participantsOf,
  replyCandidates,
  SUBJECT_THREAD_WINDOW_MS,
  THREAD_LOCK_SQL,
  threadLockKey,
  type ThreadingInput,
} from './threading.ts';

/**
 * Thread placement in SQL: the rules of threading.ts (reply by Message-ID, else subject plus a
 * shared participant inside the window, else a new thread) applied and the thread counted in
 * one statement, so that a send can place its outbound message inside its acceptance
 * statement and an inbound message needs one round trip. Run after lockWorkspaceThreads in
 * the same transaction: the statement's snapshot then sees every message of the conversation
 * committed before the lock was granted.
 *
 * The CTEs below are named `tp_*`; `tp_thread` holds the placed thread's id and the parent
 * message's id (null when the message replies to nothing in the workspace).
 */

/** How many of the most recent subject matches are compared by participants (bounds the work per message). */
const SUBJECT_CANDIDATES = 20;

/** The domain of an address as threading compares it (db/sql-fragment.ts addressDomainSql). */
const domainOf = addressDomainSql;

/**
 * The placement CTEs (without `with`), for the message `input` of workspace `orgId`:
 *   tp_reply    the first In-Reply-To / References candidate found in the workspace (and its thread);
 *               nothing is read when there are none (a one-time filter: a prepared statement's
 *               generic plan, made while the tables were small, must not scan the workspace's
 *               messages for a send that replies to nothing);
 *   tp_subject  else the most recent of the last 20 threads with the normalised subject inside the
 *               window whose participants overlap: the outside ones (not on the workspace's own
 *               domains) when both sides have some, else all of them;
 *   tp_joined / tp_created  counts the message in that thread (participants, message_count,
 *               last_message_at, updated_at; row-locked by the update, so concurrent joins stay
 *               exact; with `reopen`, a message received, an archived thread comes back), or
 *               opens a new one.
 */
export function threadPlacementCtes(orgId: string, input: ThreadingInput, options: { reopen?: boolean; now?: Date } = {}): SqlFragment {
  const now = options.now ?? new Date();
  const normalized = normalizeSubject(input.subject).slice(0, 998);
  const sql = `
    tp_reply as (
      select m.thread_id, m.id as parent_id
        from inbox_messages m join inbox_threads t on t.id = m.thread_id
       where cardinality(:tpCandidates::text[]) > 0 and m.org_id = :tpOrg and m.rfc_message_id = any(:tpCandidates::text[])
       order by array_position(:tpCandidates::text[], m.rfc_message_id::text), m.created_at
       limit 1
    ),
    tp_own as (
      select coalesce(array_agg(lower(d.domain)), '{}'::text[]) as domains from domains d where d.org_id = :tpOrg
    ),
    tp_outside as (
      select array(select x from unnest(:tpParticipants::text[]) x where ${domainOf('x')} <> all(tp_own.domains)) as addrs from tp_own
    ),
    tp_subject as (
      select c.id
        from (select t.id, t.participants, t.last_message_at from inbox_threads t
               where t.org_id = :tpOrg and t.normalized_subject = :tpNormalized and :tpNormalized <> ''
                 and t.last_message_at >= :tpSince::timestamptz
               order by t.last_message_at desc limit ${SUBJECT_CANDIDATES}) c, tp_outside o, tp_own
       where case when cardinality(o.addrs) > 0
                   and exists (select 1 from unnest(c.participants) x where ${domainOf('x')} <> all(tp_own.domains))
                  then c.participants && o.addrs
                  else c.participants && :tpParticipants::text[] end
       order by c.last_message_at desc limit 1
    ),
    tp_target as (
      select coalesce((select thread_id from tp_reply), (select id from tp_subject)) as id
    ),
    tp_joined as (
      update inbox_threads t
         set participants = array(select x from unnest(t.participants || :tpParticipants::text[]) with ordinality u(x, n) group by x order by min(n)),
             message_count = t.message_count + 1,
             last_message_at = greatest(t.last_message_at, :tpAt::timestamptz),
             archived = t.archived and not :tpReopen::boolean,
             updated_at = :tpNow::timestamptz
       where t.id = (select id from tp_target)
      returning t.id
    ),
    tp_created as (
      insert into inbox_threads (id, org_id, subject, normalized_subject, participants, message_count, last_message_at, created_at, updated_at)
      select :tpNewId, :tpOrg, :tpSubject, :tpNormalized, :tpParticipants::text[], 1, :tpAt::timestamptz, :tpNow::timestamptz, :tpNow::timestamptz
       where (select id from tp_target) is null
      returning id
    ),
    tp_thread as (
      select coalesce((select id from tp_joined), (select id from tp_created)) as id, (select parent_id from tp_reply) as parent_id
    )`;
  return {
    sql,
    params: {
      tpOrg: orgId,
      tpCandidates: replyCandidates(input.inReplyTo, input.references),
      tpParticipants: participantsOf(input.participants),
      tpNormalized: normalized,
      tpSince: new Date(input.at.getTime() - SUBJECT_THREAD_WINDOW_MS),
      tpAt: input.at,
      tpNow: now,
      tpNewId: newId(),
      tpSubject: input.subject.slice(0, 998),
      tpReopen: options.reopen ?? false,
    },
  };
}

/**
 * Serialises threading of messages with the same normalised subject and participants in one
 * workspace until the caller's transaction ends, so two messages of one new conversation
 * arriving together do not open two threads. Other messages thread concurrently: a
 * workspace-wide lock would make every send of a workspace wait for the one before it (a
 * receipt sent to a thousand customers has one subject but a thousand conversations). The
 * thread row itself is locked when a message joins it (threadPlacementCtes), so its counters
 * stay exact.
 */
export async function lockWorkspaceThreads(
  em: EntityManager,
  orgId: string,
  message: { subject: string; participants: readonly string[] },
): Promise<void> {
  await em.execute(`select ${THREAD_LOCK_SQL}`, { threadLock: threadLockKey(orgId, message) });
}

export interface Placement {
  threadId: string;
  /** The message this one replies to, when it is in the workspace. */
  parentId: string | null;
}

/**
 * Places a message on its own (inbound ingestion): one statement, in the caller's transaction,
 * after lockWorkspaceThreads.
 */
export async function placeInThread(em: EntityManager, orgId: string, input: ThreadingInput): Promise<Placement> {
  const placement = threadPlacementCtes(orgId, input, { reopen: true });
  const [row] = await executePrepared<{ id: string; parent_id: string | null }>(em, {
    sql: `with ${placement.sql} select id, parent_id from tp_thread`,
    params: placement.params,
  });
  if (!row?.id) throw new Error(`thread placement in workspace ${orgId} found no thread`);
  return { threadId: row.id, parentId: row.parent_id };
}
