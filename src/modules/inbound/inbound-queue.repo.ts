/**
 * The inbound queue: inbound_messages rows while `received`, due at `next_attempt_at` (receipt,
 * a retry's time, or the lapse of an attempt's lease), claimed by the inbound actor's drain with
 * `FOR UPDATE SKIP LOCKED`; and the actor's drain lease (actor_leases). Raw messages belong to
 * no workspace until routed, so no statement here needs the workspace condition.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { INBOUND_INTAKE_LEASE } from '../../../workflows/inbound-intake.ts';
import { INBOUND_WAKE_CHANNEL } from '../../queue/wakes.ts';

const DUE = `status = 'received' and next_attempt_at <= now()`;

/** A claimed raw message: its id and the number of this attempt (1 for the first). */
export interface ClaimedInbound {
  id: string;
  attempt: number;
  /** When it fell due (receipt or a retry time), epoch ms. */
  dueMs: number;
}

/**
 * Pokes the drain if it runs in some worker (delivered at commit), and says whether it runs:
 * call it in the transaction that records the raw message.
 */
export async function notifyInboundDrain(em: EntityManager): Promise<{ draining: boolean }> {
  const [row] = await em.execute<{ draining: boolean }[]>(
    `select pg_notify('${INBOUND_WAKE_CHANNEL}', ?),
            coalesce((select lease_until > now() from actor_leases where name = ?), false) as draining`,
    [INBOUND_INTAKE_LEASE, INBOUND_INTAKE_LEASE],
  );
  return { draining: row?.draining ?? false };
}

/**
 * Counts the start of an ingestion attempt on a raw message (`attempts` + 1, updated_at moves);
 * a claim reports the attempt number from it.
 */
export async function countIngestAttempt(em: EntityManager, inboundId: string): Promise<void> {
  await em
    .getConnection()
    .execute(`update inbound_messages set attempts = attempts + 1, updated_at = now() where id = ?`, [inboundId], 'run');
}

export function createInboundQueue(orm: MikroORM) {
  const db = () => orm.em.getConnection();

  /** The open raw messages and when the next one falls due. */
  async function readState(): Promise<{ next_due_ms: number | null; open: number }> {
    const [row] = await db().execute<{ next_due_ms: number | null; open: number }[]>(
      `select (extract(epoch from min(next_attempt_at)) * 1000)::float8 as next_due_ms, count(*)::int as open
         from inbound_messages where status = 'received'`,
    );
    return row ?? { next_due_ms: null, open: 0 };
  }

  return {
    /** Marks the actor's drain as running until `seconds` from now. */
    async leaseActor(seconds: number): Promise<void> {
      await db().execute(
        `insert into actor_leases (name, lease_until) values (?, now() + make_interval(secs => ?))
         on conflict (name) do update set lease_until = excluded.lease_until`,
        [INBOUND_INTAKE_LEASE, seconds],
        'run',
      );
    },

    async releaseActor(): Promise<void> {
      await db().execute(`update actor_leases set lease_until = null where name = ?`, [INBOUND_INTAKE_LEASE], 'run');
    },

    /**
     * Claims up to `limit` due raw messages (oldest due first); each becomes due again at the end
     * of its lease unless its attempt settles it or records a retry time, so a dead worker's
     * message is taken again. The attempt number counts the attempt recordMessages is about to
     * count (it adds one to `attempts` when it starts).
     */
    async claim(limit: number, leaseSeconds: number): Promise<ClaimedInbound[]> {
      const rows = await db().execute<{ id: string; attempts: number; due_ms: number }[]>(
        `update inbound_messages m set next_attempt_at = now() + make_interval(secs => ?)
           from (select id, next_attempt_at as due_at from inbound_messages
                  where ${DUE} order by next_attempt_at, id limit ? for update skip locked) due
          where m.id = due.id
         returning m.id, m.attempts, (extract(epoch from due.due_at) * 1000)::float8 as due_ms`,
        [leaseSeconds, limit],
      );
      return rows.map((row) => ({ id: row.id, attempt: row.attempts + 1, dueMs: row.due_ms }));
    },

    /** Extends the leases of the messages whose attempts are still running. */
    async extendLeases(ids: readonly string[], leaseSeconds: number): Promise<void> {
      if (ids.length === 0) return;
      await db().execute(
        `update inbound_messages set next_attempt_at = now() + make_interval(secs => ?) where id in (?) and status = 'received'`,
        [leaseSeconds, [...ids]],
        'run',
      );
    },

    /** After a failed attempt that is not the last: due again in `delayMs`, with the error shown. */
    async retryLater(id: string, delayMs: number, error: string): Promise<void> {
      await db().execute(
        `update inbound_messages set next_attempt_at = now() + make_interval(secs => ?), last_error = ?, updated_at = now()
          where id = ? and status = 'received'`,
        [delayMs / 1000, error.slice(0, 1024), id],
        'run',
      );
    },

    state: readState,

    /** Epoch ms when the next open raw message falls due, or null. */
    async nextDue(): Promise<number | null> {
      return (await readState()).next_due_ms;
    },

    /** Whether raw messages have been due for longer than `marginMs` with no drain running (the reconciler's look). */
    async isStranded(marginMs: number): Promise<boolean> {
      const [row] = await db().execute<{ stranded: boolean }[]>(
        `select exists (select 1 from inbound_messages where status = 'received' and next_attempt_at < now() - make_interval(secs => ?))
            and not coalesce((select lease_until > now() from actor_leases where name = ?), false) as stranded`,
        [marginMs / 1000, INBOUND_INTAKE_LEASE],
      );
      return row?.stranded ?? false;
    },
  };
}

export type InboundQueue = ReturnType<typeof createInboundQueue>;
