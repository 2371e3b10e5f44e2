/**
 * The statement that records webhook attempts (endpoint-queue.repo.ts and the drains' group
 * commits use it). Raw SQL is outside the tenant filter: every row names its workspace.
 */
import { newId } from '../../../db/ids.ts';
import type { WebhookDeliveryStatus } from '../../../db/entities/index.ts';
import { arrayLiteral } from '../../../db/prepared.ts';
import type { SqlFragment } from '../../../db/sql-fragment.ts';

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

/** An attempt record with the workspace and endpoint it belongs to (a group may hold several endpoints'). */
export interface OwnedAttemptRecord extends AttemptRecord {
  orgId: string;
  endpointId: string;
}

/** The records' columns, each bound as one array (`unnest`), in the order of `v`'s columns. */
const COLUMNS: readonly [string, string, (r: OwnedAttemptRecord, at: string) => string | null][] = [
  ['attemptIds', 'text', () => newId()],
  ['orgIds', 'text', (r) => r.orgId],
  ['endpointIds', 'text', (r) => r.endpointId],
  ['deliveryIds', 'text', (r) => r.deliveryId],
  ['series', 'int', (r) => String(r.series)],
  ['attemptNumbers', 'int', (r) => String(r.attemptNumber)],
  ['startedAts', 'timestamptz', (r) => r.startedAt.toISOString()],
  ['statusCodes', 'int', (r) => (r.statusCode === null ? null : String(r.statusCode))],
  // numeric, then int: a fractional value rounds as the inlined `?::int` of before did.
  ['latencies', 'numeric', (r) => (r.latencyMs === null ? null : String(r.latencyMs))],
  ['errors', 'text', (r) => r.error],
  ['excerpts', 'text', (r) => r.excerpt],
  ['statuses', 'text', (r) => r.status],
  ['nextAttemptAts', 'timestamptz', (r) => r.nextAttemptAt?.toISOString() ?? null],
  ['goneReasons', 'text', (r, at) => (r.gone ? `the receiver answered 410 Gone to delivery ${r.deliveryId} at ${at}` : null)],
];

const UNNEST = `select attempt_id, org_id, webhook_id, delivery_id, series, attempt_number, started_at, status_code,
            latency_ms::int as latency_ms, error, excerpt, status, next_attempt_at, gone_reason
       from unnest(${COLUMNS.map(([name, type]) => `:${name}::${type}[]`).join(', ')})
         as u (attempt_id, org_id, webhook_id, delivery_id, series, attempt_number, started_at, status_code, latency_ms, error, excerpt, status, next_attempt_at, gone_reason)`;

/**
 * The statement that records attempts (of any endpoints and workspaces) and each delivery's new
 * state, disabling an endpoint that answered 410; an attempt already on record (same delivery,
 * series and number) leaves its delivery untouched. Its values are bound as one array per column
 * (one statement text whatever the number of records: two shapes, with and without a 410), so it
 * runs as a prepared statement (db/prepared.ts) instead of MikroORM inlining 14 values a record.
 */
export function attemptRecordsStatement(records: readonly OwnedAttemptRecord[]): SqlFragment {
  const at = new Date().toISOString();
  const params: Record<string, string> = {};
  for (const [name, , value] of COLUMNS) params[name] = arrayLiteral(records.map((r) => value(r, at)));
  const gone = records.some((r) => r.gone);
  return {
    sql: `with v as (
       ${UNNEST}
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
        set status = v.status, attempt_count = d.attempt_count + 1, series_attempts = greatest(d.series_attempts, v.attempt_number), next_attempt_at = v.next_attempt_at, lease_until = null,
            last_response_status = v.status_code, last_response_excerpt = v.excerpt, last_error = v.error, updated_at = now()
       from v
      where d.id = v.delivery_id and d.org_id = v.org_id and d.replay_count = v.series
        and d.id in (select delivery_id from inserted)`,
    params,
  };
}
