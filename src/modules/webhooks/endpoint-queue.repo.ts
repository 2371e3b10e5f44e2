/**
 * The webhook delivery queue: webhook_deliveries rows of one endpoint, claimed by its actor's
 * drain with `FOR UPDATE SKIP LOCKED`, and the endpoint's drain lease. Raw SQL is outside the
 * tenant filter, so every statement names the workspace itself.
 *
 * Row states: `queued` / `failed` with `next_attempt_at` (due once it has passed), `delivering`
 * with `lease_until` (an attempt in flight; a lapsed lease means its drain died), `delivered`,
 * `exhausted`.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { queryPrepared } from '../../../db/prepared.ts';
import { attemptRecordsStatement, type AttemptRecord, type OwnedAttemptRecord } from './attempt-records.repo.ts';

/** An attempt in flight whose lease lapsed: its drain died; it counts as abandoned. */
const LAPSED = `lease_until < now()`;

export interface LeasedEndpoint {
  url: string;
  enabled: boolean;
  secret_encrypted: string;
  /** The secret a rotation replaced, while its overlap lasts (else null). */
  previous_secret_encrypted: string | null;
  disabled_reason: string | null;
}

export interface ClaimedDelivery {
  id: string;
  /** When it fell due (epoch ms): its creation, replay or retry time. */
  due_ms: number;
  event_id: string;
  replay_count: number;
  /** Attempts already recorded in this series: the claim is attempt `series_attempts + 1`. */
  series_attempts: number;
  event_type: string | null;
  api_version: string | null;
  data: Record<string, unknown> | null;
  /** Epoch ms (raw queries return timestamps as text; epochs are exact). */
  event_created_ms: number | null;
}

export type { AttemptRecord, OwnedAttemptRecord } from './attempt-records.repo.ts';

export interface QueueState {
  /** Epoch ms of the earliest due time among open rows (a retry, a lease to lapse); null when none. */
  next_due_ms: number | null;
  open: number;
}

/**
 * The claim: the due rows of one endpoint by due time (webhook_deliveries_due_index), each with
 * its event (primary key). It runs as a prepared statement, whose generic plan may be made while
 * the tables are small and kept as they grow, so its shape leaves that plan few ways to go wrong:
 * the series' attempt count is the row's own column (no attempt-log lookup); `due` is a CTE, run
 * once, so no plan can rescan the locking LIMIT and claim more than `limit` rows; the event is read
 * by id alone (`offset 0` keeps the workspace condition out of it, so the workspace's index of
 * events is never scanned instead of the primary key).
 */
const CLAIM_SQL = `with due as materialized (
     select id, next_attempt_at as due_at from webhook_deliveries
      where webhook_id = :endpointId and org_id = :orgId and status in ('queued', 'failed') and next_attempt_at <= now()
      order by next_attempt_at, id
      limit :limit::int for update skip locked
   ), claimed as (
     update webhook_deliveries d
        set status = 'delivering', lease_until = now() + make_interval(secs => :leaseSeconds::float8), next_attempt_at = null, updated_at = now()
       from due
      where d.id = due.id
     returning d.id, d.event_id, d.replay_count, d.series_attempts, (extract(epoch from due.due_at) * 1000)::float8 as due_ms
   )
   select c.id, c.event_id, c.replay_count, c.due_ms, c.series_attempts,
          e.type as event_type, e.api_version, e.data,
          (extract(epoch from e.created_at) * 1000)::float8 as event_created_ms
     from claimed c
     left join lateral (select type, api_version, data, created_at, org_id from events where id = c.event_id offset 0) e
       on e.org_id = :orgId
    order by c.id`;

export function createEndpointQueue(orm: MikroORM) {
  const db = () => orm.em.getConnection();

  return {
    /**
     * Marks the endpoint's drain as running until `seconds` from now and returns the endpoint
     * (null when it no longer exists). Called at the start of a drain and as it goes on.
     */
    async leaseEndpoint(orgId: string, endpointId: string, seconds: number): Promise<LeasedEndpoint | null> {
      const [row] = await db().execute<LeasedEndpoint[]>(
        `update webhook_endpoints set drain_lease_until = now() + make_interval(secs => ?)
          where id = ? and org_id = ?
          returning url, enabled, secret_encrypted,
                    case when previous_secret_expires_at > now() then previous_secret_encrypted end as previous_secret_encrypted,
                    disabled_reason`,
        [seconds, endpointId, orgId],
      );
      return row ?? null;
    },

    async releaseEndpoint(orgId: string, endpointId: string): Promise<void> {
      await db().execute(`update webhook_endpoints set drain_lease_until = null where id = ? and org_id = ?`, [endpointId, orgId], 'run');
    },

    /**
     * Claims up to `limit` due rows (oldest due first) as `delivering` with a lease, with what
     * their request needs, in one statement (prepared per pooled connection: its plan is one
     * index range of the due index and primary-key lookups, whatever the values).
     */
    async claim(orgId: string, endpointId: string, limit: number, leaseSeconds: number): Promise<ClaimedDelivery[]> {
      return queryPrepared<ClaimedDelivery>(orm.em, { sql: CLAIM_SQL, params: { leaseSeconds, endpointId, orgId, limit } });
    },

    /**
     * Records attempts (of any endpoints and workspaces) and each delivery's new state in one
     * statement, disabling an endpoint that answered 410: an attempt already on record (same
     * delivery, series and number) leaves its delivery untouched.
     */
    async recordMany(records: readonly OwnedAttemptRecord[]): Promise<void> {
      if (records.length > 0) await queryPrepared(orm.em, attemptRecordsStatement(records));
    },

    /** Renews the leases of claimed rows (in flight or waiting to be sent) for `seconds`. */
    async extendLeases(orgId: string, deliveryIds: readonly string[], seconds: number): Promise<void> {
      if (deliveryIds.length === 0) return;
      await db().execute(
        `update webhook_deliveries set lease_until = now() + make_interval(secs => ?)
          where id in (?) and org_id = ? and status = 'delivering'`,
        [seconds, [...deliveryIds], orgId],
        'run',
      );
    },

    /** Puts claimed rows that were never sent back in the queue, due when they were (queued, or failed when an attempt of the series is on record). */
    async unclaim(orgId: string, rows: readonly ClaimedDelivery[]): Promise<void> {
      if (rows.length === 0) return;
      await db().execute(
        `update webhook_deliveries d
            set status = case when v.series_attempts > 0 then 'failed' else 'queued' end,
                next_attempt_at = to_timestamp(v.due_ms / 1000.0), lease_until = null, updated_at = now()
           from (values ${rows.map(() => '(?, ?::float8, ?::int)').join(', ')}) as v (id, due_ms, series_attempts)
          where d.id = v.id and d.org_id = ? and d.status = 'delivering'`,
        [...rows.flatMap((r) => [r.id, r.due_ms, r.series_attempts]), orgId],
        'run',
      );
    },

    /** Ends rows that can no longer be sent (endpoint disabled or deleted, event deleted) without an attempt. */
    async finishWithoutAttempt(orgId: string, deliveryIds: readonly string[], error: string): Promise<void> {
      if (deliveryIds.length === 0) return;
      await db().execute(
        `update webhook_deliveries set status = 'exhausted', next_attempt_at = null, lease_until = null, last_error = ?, updated_at = now()
          where id in (?) and org_id = ? and status not in ('delivered', 'exhausted')`,
        [error, [...deliveryIds], orgId],
        'run',
      );
    },

    /**
     * Attempts whose drain died mid-request (lease lapsed): recorded as abandoned (no status
     * code; the receiver may have had it) and due again at once, or exhausted when it was the
     * series' last attempt. Returns how many were found.
     */
    async reapLapsed(orgId: string, endpointId: string, scheduleLength: number, abandonedError: string): Promise<number> {
      return orm.em.fork().transactional(async (em) => {
        // The series' attempts from the attempt log, not the row's series_attempts: should that
        // count be stale (a worker of an earlier version recorded an attempt), the claim's attempt
        // number was taken and its record dropped; the reaper's record repairs the row.
        const lapsed = await em.execute<{ id: string; replay_count: number; started_ms: number; series_attempts: number }[]>(
          `select d.id, d.replay_count,
                  (extract(epoch from d.updated_at) * 1000)::float8 as started_ms,
                  (select coalesce(max(a.attempt_number), 0) from webhook_attempts a
                    where a.delivery_id = d.id and a.series = d.replay_count)::int as series_attempts
             from webhook_deliveries d
            where d.webhook_id = ? and d.org_id = ? and d.status = 'delivering' and d.${LAPSED}
            for update skip locked`,
          [endpointId, orgId],
        );
        if (lapsed.length === 0) return 0;
        const records: AttemptRecord[] = lapsed.map((row) => {
          const attemptNumber = row.series_attempts + 1;
          const last = attemptNumber >= scheduleLength;
          return {
            deliveryId: row.id,
            series: row.replay_count,
            attemptNumber,
            startedAt: new Date(Math.round(row.started_ms)),
            statusCode: null,
            latencyMs: null,
            error: abandonedError,
            excerpt: null,
            status: last ? 'exhausted' : 'failed',
            nextAttemptAt: last ? null : new Date(),
            gone: false,
          };
        });
        // A plain statement: the reaper is rare, not worth a prepared statement per connection.
        const statement = attemptRecordsStatement(records.map((record) => ({ ...record, orgId, endpointId })));
        await em.execute(statement.sql, statement.params, 'run');
        return lapsed.length;
      });
    },

    /** Rows of an endpoint that is gone: every open one ends exhausted. */
    async finishAllOpen(orgId: string, endpointId: string, error: string): Promise<number> {
      const rows = await db().execute<{ id: string }[]>(
        `update webhook_deliveries set status = 'exhausted', next_attempt_at = null, lease_until = null, last_error = ?, updated_at = now()
          where webhook_id = ? and org_id = ? and (status in ('queued', 'failed') or (status = 'delivering' and ${LAPSED}))
          returning id`,
        [error, endpointId, orgId],
      );
      return rows.length;
    },

    /** Epoch ms when the endpoint's next open row falls due (a retry, a lease to lapse); null when none. */
    async nextDue(orgId: string, endpointId: string): Promise<number | null> {
      const [row] = await db().execute<{ next_due_ms: number | null }[]>(
        `select (extract(epoch from least(
                  (select min(next_attempt_at) from webhook_deliveries
                    where webhook_id = ? and org_id = ? and status in ('queued', 'failed')),
                  (select min(lease_until) from webhook_deliveries
                    where webhook_id = ? and org_id = ? and status = 'delivering'))) * 1000)::float8 as next_due_ms`,
        [endpointId, orgId, endpointId, orgId],
      );
      return row?.next_due_ms ?? null;
    },

    /** The endpoint's open rows and when the next one falls due. */
    async state(orgId: string, endpointId: string): Promise<QueueState> {
      const [row] = await db().execute<QueueState[]>(
        `select (extract(epoch from min(case when status = 'delivering'
                     then lease_until else next_attempt_at end)) * 1000)::float8 as next_due_ms,
                count(*)::int as open
           from webhook_deliveries
          where webhook_id = ? and org_id = ? and status in ('queued', 'failed', 'delivering')`,
        [endpointId, orgId],
      );
      return row ?? { next_due_ms: null, open: 0 };
    },
  };
}

export type EndpointQueue = ReturnType<typeof createEndpointQueue>;
