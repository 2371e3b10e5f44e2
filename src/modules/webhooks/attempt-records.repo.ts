/**
 * The statement that records webhook attempts (endpoint-queue.repo.ts and the drains' group
 * commits use it). Raw SQL is outside the tenant filter: every row names its workspace.
 */
import { newId } from '../../../db/ids.ts';
import type { WebhookDeliveryStatus } from '../../../db/entities/index.ts';

/** One attempt's outcome as the drain records it. */
export interface AttemptRecord {
  deliveryId: string;
  series: number;
  attemptNumber: number;
  startedAt: Date;
  statusCode: number | null;
  latencyMs: number | null;
  error: string | null;
  excerpt: string | null;
  status: WebhookDeliveryStatus;
  nextAttemptAt: Date | null;
  /** The receiver answered 410 Gone: the endpoint is disabled in the same statement. */
  gone: boolean;
  /** When the attempt fell due (epoch ms), for the latency metric; not stored. */
  dueMs?: number;
}

export type Run = (sql: string, params: unknown[]) => Promise<unknown>;

/** An attempt record with the workspace and endpoint it belongs to (a group may hold several endpoints'). */
export interface OwnedAttemptRecord extends AttemptRecord {
  orgId: string;
  endpointId: string;
}

/**
 * Records attempts (of any endpoints and workspaces) and each delivery's new state in one
 * statement, disabling an endpoint that answered 410; an attempt already on record (same
 * delivery, series and number) leaves its delivery untouched. `run` executes on the pool or
 * inside a transaction.
 */
export async function recordAttempts(run: Run, records: readonly OwnedAttemptRecord[]): Promise<void> {
  if (records.length === 0) return;
  const values = records
    .map(() => `(?, ?, ?, ?, ?::int, ?::int, ?::timestamptz, ?::int, ?::int, ?, ?, ?, ?::timestamptz, ?::text)`)
    .join(', ');
  const at = new Date().toISOString();
  const params = records.flatMap((r) => [
    newId(),
    r.orgId,
    r.endpointId,
    r.deliveryId,
    r.series,
    r.attemptNumber,
    r.startedAt,
    r.statusCode,
    r.latencyMs,
    r.error,
    r.excerpt,
    r.status,
    r.nextAttemptAt,
    r.gone ? `the receiver answered 410 Gone to delivery ${r.deliveryId} at ${at}` : null,
  ]);
  const gone = records.some((r) => r.gone);
  await run(
    `with v (attempt_id, org_id, webhook_id, delivery_id, series, attempt_number, started_at, status_code, latency_ms, error, excerpt, status, next_attempt_at, gone_reason) as (
       values ${values}
     ), inserted as (
       insert into webhook_attempts (id, org_id, delivery_id, series, attempt_number, started_at, status_code, latency_ms, error, response_excerpt, created_at)
       select attempt_id, org_id, delivery_id, series, attempt_number, started_at, status_code, latency_ms, error, excerpt, now() from v
       on conflict (delivery_id, series, attempt_number) do nothing
       returning delivery_id
     )${
       gone
         ? `, disabled as (
       update webhook_endpoints w set enabled = false, disabled_at = now(), disabled_reason = g.gone_reason, updated_at = now()
         from (select distinct on (webhook_id) webhook_id, org_id, gone_reason from v where gone_reason is not null) g
        where w.id = g.webhook_id and w.org_id = g.org_id and w.enabled
     )`
         : ''
     }
     update webhook_deliveries d
        set status = v.status, attempt_count = d.attempt_count + 1, next_attempt_at = v.next_attempt_at, lease_until = null,
            last_response_status = v.status_code, last_response_excerpt = v.excerpt, last_error = v.error, updated_at = now()
       from v
      where d.id = v.delivery_id and d.org_id = v.org_id and d.replay_count = v.series
        and d.id in (select delivery_id from inserted)`,
    params,
  );
}
