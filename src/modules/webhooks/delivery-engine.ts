import type { MikroORM } from '@mikro-orm/postgresql';
import type { WebhookDeliveryStatus } from '../../../db/entities/index.ts';
import { newId } from '../../../db/ids.ts';
import type { Config } from '../../config.ts';
import { decryptSecret } from '../../crypto/secret-box.ts';
import { createEndpointLimiter, type EndpointLimiter } from './endpoint-limiter.ts';
import { signatureHeaders } from './signing.ts';
import { postWebhook, retryAfterMs, type PostOptions, type PostResult } from './webhook-http.ts';

/**
 * One HTTP attempt of a webhook delivery, as the `attemptWebhookDelivery` activity runs it for
 * the deliverWebhook workflow (which owns the schedule and sleeps between attempts):
 *
 * 1. Load the delivery, its endpoint and event. A delivery whose series was superseded by a
 *    replay, or that is already final, is left alone. An attempt that is already recorded (the
 *    activity ran again after a crash) is answered from the record without sending again.
 * 2. Take a slot of the endpoint's concurrency limit (endpoint-limiter.ts) or report `busy`.
 * 3. Mark the delivery `delivering`, sign a fresh body (new timestamp, same delivery id) and POST
 *    it (webhook-http.ts: SSRF-checked address, no redirects, 15 s).
 * 4. Record the attempt and the delivery's new state in one transaction: `delivered` (2xx),
 *    `failed` with `next_attempt_at` (a retry is scheduled), or `exhausted` (the last attempt
 *    failed, the receiver answered 410 Gone, or the endpoint is disabled or gone). 410 also
 *    disables the endpoint with a `disabled_reason`.
 *
 * Delivery is at least once: a crash between the POST and step 4 sends that attempt again.
 */

export const WEBHOOK_USER_AGENT = 'Herald-Webhooks/1.0';
/** Retry-After may move the next attempt up to this far out (or the scheduled delay, if longer). */
export const MAX_RETRY_AFTER_MS = 3_600_000;
/** The shortest wait a Retry-After can ask for. */
export const MIN_RETRY_AFTER_MS = 1_000;
const TEXT_LIMIT = 1024;

export interface AttemptInput {
  orgId: string;
  deliveryId: string;
  series: number;
  /** 1-based number of this attempt within the series. */
  attemptNumber: number;
  /** The series' retry schedule (ms) as returned by its first attempt; null on the first attempt. */
  schedule: number[] | null;
  /** The workflow's jitter factor for the delay after this attempt (0.8 to 1.2). */
  jitter: number;
}

export type AttemptOutcome =
  /** 2xx: done. */
  | 'delivered'
  /** Failed; the next attempt is due after `nextDelayMs`. */
  | 'retry'
  /** Failed for good: last attempt, 410 Gone, endpoint disabled or deleted. */
  | 'exhausted'
  /** The endpoint is at its concurrency limit here: nothing was sent, try the same attempt later. */
  | 'busy'
  /** Nothing to do: the delivery is gone, final, or belongs to a newer replay series. */
  | 'stopped';

export interface AttemptResult {
  outcome: AttemptOutcome;
  /** The delivery's status after this step (null when the delivery does not exist). */
  status: WebhookDeliveryStatus | null;
  nextDelayMs: number | null;
  /** The retry schedule of this series (ms), fixed by its first attempt. */
  schedule: number[];
  statusCode: number | null;
  error: string | null;
}

interface DeliveryRow {
  id: string;
  org_id: string;
  status: WebhookDeliveryStatus;
  replay_count: number;
  /** Epoch milliseconds (raw queries return timestamps as text; epochs are exact). */
  next_attempt_ms: number | null;
  webhook_id: string;
  event_id: string;
  url: string | null;
  enabled: boolean | null;
  secret_encrypted: string | null;
  disabled_reason: string | null;
  event_type: string | null;
  api_version: string | null;
  data: Record<string, unknown> | null;
  event_created_ms: number | null;
  recorded: boolean;
  latest_attempt: number | null;
}

const LOAD_SQL = `
  select d.id, d.org_id, d.status, d.replay_count, d.webhook_id, d.event_id,
         (extract(epoch from d.next_attempt_at) * 1000)::float8 as next_attempt_ms,
         w.url, w.enabled, w.secret_encrypted, w.disabled_reason,
         e.type as event_type, e.api_version, e.data,
         (extract(epoch from e.created_at) * 1000)::float8 as event_created_ms,
         exists (select 1 from webhook_attempts a
                  where a.delivery_id = d.id and a.series = ? and a.attempt_number = ?) as recorded,
         (select max(a.attempt_number) from webhook_attempts a
           where a.delivery_id = d.id and a.series = ?) as latest_attempt
    from webhook_deliveries d
    left join webhook_endpoints w on w.id = d.webhook_id and w.org_id = d.org_id
    left join events e on e.id = d.event_id and e.org_id = d.org_id
   where d.id = ? and d.org_id = ?`;

function clip(text: string | null): string | null {
  if (text === null) return null;
  const clean = text.replace(/\0/g, '');
  return clean.length > TEXT_LIMIT ? `${clean.slice(0, TEXT_LIMIT - 1)}…` : clean;
}

/** The delivered JSON: `{id, object: "event", type, created_at, api_version, data}`. */
export function eventPayload(row: { event_id: string; event_type: string; event_created_ms: number; api_version: string; data: unknown }): string {
  return JSON.stringify({
    id: row.event_id,
    object: 'event',
    type: row.event_type,
    created_at: new Date(Math.round(row.event_created_ms)).toISOString(),
    api_version: row.api_version,
    data: row.data,
  });
}

/**
 * The wait before the next attempt: the schedule's entry for it with the workflow's jitter,
 * replaced by a 429/503 Retry-After bounded to [1 s, max(scheduled, 1 h)].
 */
export function nextDelay(scheduledMs: number, jitter: number, retryAfter: number | null): number {
  const planned = Math.round(scheduledMs * jitter);
  if (retryAfter === null) return planned;
  return Math.min(Math.max(retryAfter, MIN_RETRY_AFTER_MS), Math.max(planned, MAX_RETRY_AFTER_MS));
}

function failureText(result: PostResult): string | null {
  if (result.error) return result.error;
  if (result.statusCode === null || (result.statusCode >= 200 && result.statusCode < 300)) return null;
  if (result.statusCode === 410) return 'the receiver answered 410 Gone: endpoint disabled, no further attempts';
  return `the receiver answered HTTP ${result.statusCode}`;
}

export interface DeliveryEngineDeps {
  orm: MikroORM;
  config: Pick<Config, 'webhooks' | 'encryptionKey'>;
  limiter?: EndpointLimiter;
  /** Overrides for the HTTP client (tests of the engine itself). */
  http?: Partial<PostOptions>;
}

/** The delivery engine of one worker process (its endpoint limiter is per process). */
export function createDeliveryEngine(deps: DeliveryEngineDeps) {
  const { orm, config } = deps;
  const limiter = deps.limiter ?? createEndpointLimiter();
  const connection = () => orm.em.getConnection();

  async function finishWithoutAttempt(row: DeliveryRow, error: string): Promise<void> {
    await connection().execute(
      `update webhook_deliveries set status = 'exhausted', next_attempt_at = null, last_error = ?, updated_at = now()
        where id = ? and org_id = ? and replay_count = ? and status not in ('delivered', 'exhausted')`,
      [clip(error), row.id, row.org_id, row.replay_count],
      'run',
    );
  }

  return {
    limiter,

    /** Runs one attempt (see the module comment). Throws only for infrastructure failures (database). */
    async attempt(input: AttemptInput): Promise<AttemptResult> {
      const schedule = input.schedule ?? config.webhooks.retryScheduleMs;
      const base = { schedule, statusCode: null, error: null, nextDelayMs: null };
      const [row] = await connection().execute<DeliveryRow[]>(LOAD_SQL, [
        input.series,
        input.attemptNumber,
        input.series,
        input.deliveryId,
        input.orgId,
      ]);
      if (!row) return { ...base, outcome: 'stopped', status: null };
      if (row.replay_count !== input.series) return { ...base, outcome: 'stopped', status: row.status };

      if (row.recorded) {
        // This attempt already ran and was recorded (a retried activity): answer from the record.
        if (row.status === 'delivered' || row.status === 'exhausted') return { ...base, outcome: row.status, status: row.status };
        const latest = row.latest_attempt === input.attemptNumber;
        const due = latest && row.next_attempt_ms !== null ? Math.max(0, Math.round(row.next_attempt_ms - Date.now())) : 0;
        return { ...base, outcome: 'retry', status: row.status, nextDelayMs: due };
      }
      if (row.status === 'delivered' || row.status === 'exhausted') return { ...base, outcome: 'stopped', status: row.status };

      if (row.url === null || row.enabled === null) {
        await finishWithoutAttempt(row, 'the webhook endpoint no longer exists');
        return { ...base, outcome: 'exhausted', status: 'exhausted', error: 'endpoint deleted' };
      }
      if (!row.enabled) {
        await finishWithoutAttempt(row, `the webhook endpoint is disabled${row.disabled_reason ? `: ${row.disabled_reason}` : ''}`);
        return { ...base, outcome: 'exhausted', status: 'exhausted', error: 'endpoint disabled' };
      }
      if (row.event_type === null || row.event_created_ms === null || row.api_version === null) {
        await finishWithoutAttempt(row, 'the event no longer exists');
        return { ...base, outcome: 'exhausted', status: 'exhausted', error: 'event deleted' };
      }

      const release = await limiter.acquire(row.webhook_id);
      if (!release) return { ...base, outcome: 'busy', status: row.status };
      const startedAt = new Date();
      let result: PostResult;
      try {
        await connection().execute(
          `update webhook_deliveries set status = 'delivering', next_attempt_at = null, updated_at = now()
            where id = ? and org_id = ? and replay_count = ? and status not in ('delivered', 'exhausted')`,
          [row.id, row.org_id, row.replay_count],
          'run',
        );
        let secret: string | null = null;
        let secretProblem = 'HERALD_ENCRYPTION_KEY is not configured on the worker';
        if (config.encryptionKey && row.secret_encrypted) {
          try {
            secret = decryptSecret(config.encryptionKey, row.secret_encrypted);
          } catch {
            secretProblem = 'the signing secret cannot be decrypted with HERALD_ENCRYPTION_KEY';
          }
        }
        if (secret === null) {
          result = { statusCode: null, headers: {}, excerpt: null, error: `not sent: ${secretProblem}`, latencyMs: 0, address: null };
        } else {
          const body = eventPayload({ ...row, event_type: row.event_type, event_created_ms: row.event_created_ms, api_version: row.api_version });
          const headers = {
            'Content-Type': 'application/json',
            'User-Agent': WEBHOOK_USER_AGENT,
            'Herald-Event-Id': row.event_id,
            'Herald-Delivery-Id': row.id,
            'Herald-Event-Type': row.event_type,
            ...signatureHeaders({ secret, deliveryId: row.id, timestamp: Math.floor(Date.now() / 1000), body }),
          };
          result = await postWebhook(row.url, headers, body, { allowPrivateTargets: config.webhooks.allowPrivateTargets, ...deps.http });
        }
      } finally {
        release();
      }

      const delivered = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300 && result.error === null;
      const gone = result.statusCode === 410;
      const last = input.attemptNumber >= schedule.length;
      let outcome: AttemptOutcome;
      let nextDelayMs: number | null = null;
      if (delivered) outcome = 'delivered';
      else if (gone || last) outcome = 'exhausted';
      else {
        outcome = 'retry';
        nextDelayMs = nextDelay(schedule[input.attemptNumber]!, input.jitter, retryAfterMs(result.statusCode, result.headers));
      }
      const status: WebhookDeliveryStatus = outcome === 'retry' ? 'failed' : outcome;
      const error = clip(failureText(result));

      await orm.em.fork().transactional(async (em) => {
        const inserted = await em.execute<{ id: string }[]>(
          `insert into webhook_attempts (id, org_id, delivery_id, series, attempt_number, started_at, status_code, latency_ms, error, response_excerpt, created_at)
           values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())
           on conflict (delivery_id, series, attempt_number) do nothing returning id`,
          [newId(), row.org_id, row.id, input.series, input.attemptNumber, startedAt, result.statusCode, result.latencyMs, error, clip(result.excerpt)],
        );
        // Recorded meanwhile by another run of this attempt: that record stands.
        if (inserted.length === 0) return;
        await em.execute(
          `update webhook_deliveries
              set status = ?, attempt_count = attempt_count + 1, next_attempt_at = ?,
                  last_response_status = ?, last_response_excerpt = ?, last_error = ?, updated_at = now()
            where id = ? and org_id = ? and replay_count = ?`,
          [
            status,
            nextDelayMs === null ? null : new Date(Date.now() + nextDelayMs),
            result.statusCode,
            clip(result.excerpt),
            error,
            row.id,
            row.org_id,
            input.series,
          ],
          'run',
        );
        if (gone) {
          await em.execute(
            `update webhook_endpoints set enabled = false, disabled_at = now(), disabled_reason = ?, updated_at = now()
              where id = ? and org_id = ? and enabled`,
            [`the receiver answered 410 Gone to delivery ${row.id} at ${new Date().toISOString()}`, row.webhook_id, row.org_id],
            'run',
          );
        }
      });
      return { outcome, status, nextDelayMs, schedule, statusCode: result.statusCode, error };
    },
  };
}

export type DeliveryEngine = ReturnType<typeof createDeliveryEngine>;
