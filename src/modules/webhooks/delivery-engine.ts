import type { MikroORM } from '@mikro-orm/postgresql';
import type { WebhookDeliveryStatus } from '../../../db/entities/index.ts';
import { newId } from '../../../db/ids.ts';
import type { Config } from '../../config.ts';
import { decryptSecret } from '../../crypto/secret-box.ts';
import { clip, eventPayload, failureText, nextDelay } from './delivery.fns.ts';
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
 *    An attempt that is not recorded while the delivery is still `delivering` was interrupted
 *    (the worker died waiting for the answer, or the record failed): it is recorded as
 *    abandoned, with no status code, and the next attempt follows at once (see `abandon`).
 * 2. Take a slot of the endpoint's concurrency limit (endpoint-limiter.ts) or report `busy`.
 * 3. Mark the delivery `delivering`, sign a fresh body (new timestamp, same delivery id) and POST
 *    it (webhook-http.ts: SSRF-checked address, no redirects, 15 s).
 * 4. Record the attempt and the delivery's new state in one transaction: `delivered` (2xx),
 *    `failed` with `next_attempt_at` (a retry is scheduled), or `exhausted` (the last attempt
 *    failed, the receiver answered 410 Gone, or the endpoint is disabled or gone). 410 also
 *    disables the endpoint with a `disabled_reason`.
 *
 * Delivery is at least once: after a crash between the POST and step 4 the receiver may get the
 * request twice, with the same `Herald-Delivery-Id` / `webhook-id` to dedupe on; the attempt log
 * shows both (the abandoned one and the one after it).
 */

// Kept importable from here (bench and tests use them); they live in delivery.fns.ts.
export { eventPayload, MAX_RETRY_AFTER_MS, MIN_RETRY_AFTER_MS, nextDelay } from './delivery.fns.ts';

export const WEBHOOK_USER_AGENT = 'Herald-Webhooks/1.0';
/** The error recorded for an attempt whose worker stopped before its answer was recorded. */
export const ABANDONED_ERROR =
  'abandoned: the attempt was interrupted (worker stopped) before its answer was recorded; the receiver may have received it';

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
  /** When the row last changed (for `delivering`: when the attempt in flight began). */
  updated_ms: number;
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
         (extract(epoch from d.updated_at) * 1000)::float8 as updated_ms,
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

/** What `record` writes: the attempt row and the delivery's state after it. */
interface Recorded {
  startedAt: Date;
  statusCode: number | null;
  latencyMs: number | null;
  error: string | null;
  excerpt: string | null;
  status: WebhookDeliveryStatus;
  nextDelayMs: number | null;
  gone: boolean;
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

  /**
   * Records attempt `attemptNumber` of the series and the delivery's new state in one
   * transaction; false when another run of the same attempt recorded it first (that record stands).
   */
  async function record(row: DeliveryRow, input: AttemptInput, attempt: Recorded): Promise<boolean> {
    return orm.em.fork().transactional(async (em) => {
      const inserted = await em.execute<{ id: string }[]>(
        `insert into webhook_attempts (id, org_id, delivery_id, series, attempt_number, started_at, status_code, latency_ms, error, response_excerpt, created_at)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())
         on conflict (delivery_id, series, attempt_number) do nothing returning id`,
        [newId(), row.org_id, row.id, input.series, input.attemptNumber, attempt.startedAt, attempt.statusCode, attempt.latencyMs, attempt.error, attempt.excerpt],
      );
      if (inserted.length === 0) return false;
      await em.execute(
        `update webhook_deliveries
            set status = ?, attempt_count = attempt_count + 1, next_attempt_at = ?,
                last_response_status = ?, last_response_excerpt = ?, last_error = ?, updated_at = now()
          where id = ? and org_id = ? and replay_count = ?`,
        [
          attempt.status,
          attempt.nextDelayMs === null ? null : new Date(Date.now() + attempt.nextDelayMs),
          attempt.statusCode,
          attempt.excerpt,
          attempt.error,
          row.id,
          row.org_id,
          input.series,
        ],
        'run',
      );
      if (attempt.gone) {
        await em.execute(
          `update webhook_endpoints set enabled = false, disabled_at = now(), disabled_reason = ?, updated_at = now()
            where id = ? and org_id = ? and enabled`,
          [`the receiver answered 410 Gone to delivery ${row.id} at ${new Date().toISOString()}`, row.webhook_id, row.org_id],
          'run',
        );
      }
      return true;
    });
  }

  /**
   * The previous run of this attempt marked the delivery `delivering` and never recorded an
   * answer: the worker died mid-request (or the record failed). The request may have reached
   * the receiver, so the attempt is recorded as abandoned (no status code) and counts like any
   * failed attempt; the next one is due at once, since the answer never came. On the last
   * attempt of the schedule the delivery is exhausted (a replay sends it again).
   */
  async function abandon(row: DeliveryRow, input: AttemptInput, schedule: number[]): Promise<AttemptResult | null> {
    const last = input.attemptNumber >= schedule.length;
    const status: WebhookDeliveryStatus = last ? 'exhausted' : 'failed';
    const nextDelayMs = last ? null : 0;
    const attempt: Recorded = {
      startedAt: new Date(Math.round(row.updated_ms)),
      statusCode: null,
      latencyMs: null,
      error: ABANDONED_ERROR,
      excerpt: null,
      status,
      nextDelayMs,
      gone: false,
    };
    if (!(await record(row, input, attempt))) return null;
    return { outcome: last ? 'exhausted' : 'retry', status, nextDelayMs, schedule, statusCode: null, error: ABANDONED_ERROR };
  }

  const engine = {
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
      // Recorded meanwhile by another run of this attempt (null): answer from that record.
      if (row.status === 'delivering') return (await abandon(row, input, schedule)) ?? engine.attempt(input);

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

      const excerpt = clip(result.excerpt);
      await record(row, input, { startedAt, statusCode: result.statusCode, latencyMs: result.latencyMs, error, excerpt, status, nextDelayMs, gone });
      return { outcome, status, nextDelayMs, schedule, statusCode: result.statusCode, error };
    },
  };
  return engine;
}

export type DeliveryEngine = ReturnType<typeof createDeliveryEngine>;
