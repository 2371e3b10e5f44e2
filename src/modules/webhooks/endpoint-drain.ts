import type { MikroORM } from '@mikro-orm/postgresql';
import type { WebhookDeliveryStatus } from '../../../db/entities/index.ts';
import type { DrainSummary, WebhookEndpointInput } from '../../../workflows/webhook-endpoint.ts';
import type { Config } from '../../config.ts';
import { decryptSecret } from '../../crypto/secret-box.ts';
import { clip, failureText, nextDelay } from './delivery.fns.ts';
import { ABANDONED_ERROR, sendDelivery } from './delivery-engine.ts';
import { createEndpointQueue, type AttemptRecord, type ClaimedDelivery, type LeasedEndpoint } from './endpoint-queue.repo.ts';
import type { EndpointWakes } from './endpoint-wakes.ts';
import { retryAfterMs, type PostOptions, type PostResult } from './webhook-http.ts';

/**
 * One drain of a webhook endpoint's queue, as the endpoint actor's activity runs it:
 *
 * 1. Take the endpoint's drain lease (writers then know it is awake and do not signal it) and
 *    load the endpoint; record attempts that a dead drain left in flight as abandoned.
 * 2. Sliding window: keep up to `endpointConcurrency` requests in flight, claiming due rows
 *    (`FOR UPDATE SKIP LOCKED`, oldest due first) as slots free up, so `delivering` always means
 *    "a request is in flight" and a slow endpoint holds only its own slots.
 * 3. Record outcomes in group commits (one statement per group): delivered (2xx), failed with
 *    `next_attempt_at` (the schedule's delay ±20 %, or Retry-After), exhausted (last attempt,
 *    410 Gone, which also disables the endpoint).
 * 4. When nothing is due and nothing is in flight, linger up to `drainLingerMs` for a wake-up
 *    (NOTIFY from the fan-out) or a retry that falls due meanwhile before returning; then release the lease and report the queue,
 *    so the workflow sleeps until the next due row. The report is read after the lease is
 *    released: a row committed while a writer still saw the lease is counted as due now.
 *
 * Delivery is at least once: a request whose answer was not recorded (the worker died) is sent
 * again after its lease lapses, with the same delivery id; the attempt log shows the abandoned
 * attempt. Order: oldest due first with up to `endpointConcurrency` in flight, so receivers must
 * not rely on arrival order (events carry created_at).
 */

export interface DrainContext {
  /** Called at least every few seconds while the drain works. */
  heartbeat(): void;
  /** Aborted when the activity is cancelled or the worker shuts down: stop claiming, finish in-flight requests. */
  signal: AbortSignal;
}

export interface EndpointDrainDeps {
  orm: MikroORM;
  config: Pick<Config, 'webhooks' | 'encryptionKey'>;
  wakes: EndpointWakes;
  /** Overrides for the HTTP client (tests). */
  http?: Partial<PostOptions>;
}

/** The drain lease and a claimed row's lease: long enough for one 15 s attempt and a slow record. */
const DRAIN_LEASE_SECONDS = 30;
const ROW_LEASE_SECONDS = 30;
/** Lease refresh, heartbeat and a look for lapsed attempts, this often. */
const TICK_MS = 5_000;
/** Outcomes are committed in groups of up to this many, or after this long. */
const RECORD_GROUP = 64;
const RECORD_DELAY_MS = 5;

type Outcome = 'delivered' | 'failed' | 'exhausted';

/** Resolves the next `wait()` once something happens (a slot freed, a wake-up, a timer). */
function createNudge() {
  let resolve: (() => void) | null = null;
  let pending = false;
  return {
    nudge() {
      pending = true;
      resolve?.();
    },
    wait(ms: number): Promise<void> {
      if (pending) {
        pending = false;
        return Promise.resolve();
      }
      return new Promise<void>((done) => {
        const timer = setTimeout(finish, ms);
        function finish() {
          clearTimeout(timer);
          resolve = null;
          pending = false;
          done();
        }
        resolve = finish;
      });
    },
  };
}

export function createEndpointDrainer(deps: EndpointDrainDeps) {
  const { orm, config, wakes } = deps;
  const queue = createEndpointQueue(orm);
  const secrets = new Map<string, string | Error>();

  function secretOf(endpoint: LeasedEndpoint): string | Error {
    const cached = secrets.get(endpoint.secret_encrypted);
    if (cached !== undefined) return cached;
    let secret: string | Error;
    if (!config.encryptionKey) secret = new Error('HERALD_ENCRYPTION_KEY is not configured on the worker');
    else {
      try {
        secret = decryptSecret(config.encryptionKey, endpoint.secret_encrypted);
      } catch {
        secret = new Error('the signing secret cannot be decrypted with HERALD_ENCRYPTION_KEY');
      }
    }
    if (secrets.size > 10_000) secrets.clear();
    secrets.set(endpoint.secret_encrypted, secret);
    return secret;
  }

  /** The record of one attempt from its HTTP result. */
  function outcomeOf(row: ClaimedDelivery, startedAt: Date, result: PostResult): AttemptRecord {
    const schedule = config.webhooks.retryScheduleMs;
    const attemptNumber = row.series_attempts + 1;
    const delivered = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300 && result.error === null;
    const gone = result.statusCode === 410;
    const last = attemptNumber >= schedule.length;
    let status: WebhookDeliveryStatus;
    let nextAttemptAt: Date | null = null;
    if (delivered) status = 'delivered';
    else if (gone || last) status = 'exhausted';
    else {
      status = 'failed';
      const delay = nextDelay(schedule[attemptNumber]!, 0.8 + Math.random() * 0.4, retryAfterMs(result.statusCode, result.headers));
      nextAttemptAt = new Date(Date.now() + delay);
    }
    return {
      deliveryId: row.id,
      series: row.replay_count,
      attemptNumber,
      startedAt,
      statusCode: result.statusCode,
      latencyMs: result.latencyMs,
      error: clip(failureText(result)),
      excerpt: clip(result.excerpt),
      status,
      nextAttemptAt,
      gone,
    };
  }

  async function attempt(endpoint: LeasedEndpoint, row: ClaimedDelivery): Promise<AttemptRecord> {
    const startedAt = new Date();
    const secret = secretOf(endpoint);
    const result: PostResult =
      secret instanceof Error
        ? { statusCode: null, headers: {}, excerpt: null, error: `not sent: ${secret.message}`, latencyMs: 0, address: null }
        : await sendDelivery({
            url: endpoint.url,
            secret,
            delivery: {
              id: row.id,
              event_id: row.event_id,
              event_type: row.event_type!,
              api_version: row.api_version!,
              data: row.data,
              event_created_ms: row.event_created_ms!,
            },
            http: { allowPrivateTargets: config.webhooks.allowPrivateTargets, ...deps.http },
          });
    return outcomeOf(row, startedAt, result);
  }

  return {
    /** Drains the endpoint's due rows (see the module comment). Throws only for infrastructure failures. */
    async drain(input: WebhookEndpointInput, context: DrainContext): Promise<DrainSummary> {
      const { orgId, endpointId } = input;
      const summary = { delivered: 0, failed: 0, exhausted: 0, lastOutcome: null as string | null, lastFailed: false };
      const schedule = config.webhooks.retryScheduleMs;
      let endpoint = await queue.leaseEndpoint(orgId, endpointId, DRAIN_LEASE_SECONDS);
      if (!endpoint) {
        const ended = await queue.finishAllOpen(orgId, endpointId, 'the webhook endpoint no longer exists');
        return { nextDueAt: null, open: 0, delivered: 0, failed: 0, exhausted: ended, state: 'idle', lastOutcome: ended > 0 ? 'endpoint deleted' : null };
      }

      const nudge = createNudge();
      const unsubscribe = wakes.subscribe(endpointId, () => nudge.nudge());
      const onAbort = () => nudge.nudge();
      context.signal.addEventListener('abort', onAbort);

      let inFlight = 0;
      let failure: unknown;
      const pending: AttemptRecord[] = [];
      let flushing: Promise<void> | null = null;
      let flushTimer: NodeJS.Timeout | undefined;

      const count = (record: AttemptRecord) => {
        const outcome: Outcome = record.status === 'delivered' ? 'delivered' : record.status === 'exhausted' ? 'exhausted' : 'failed';
        summary[outcome] += 1;
        summary.lastFailed = outcome !== 'delivered';
        summary.lastOutcome = record.statusCode !== null ? `HTTP ${record.statusCode}` : (record.error ?? outcome);
      };
      const flush = (): Promise<void> => {
        clearTimeout(flushTimer);
        flushTimer = undefined;
        if (flushing) return flushing.then(() => (pending.length > 0 ? flush() : undefined));
        if (pending.length === 0) return Promise.resolve();
        const group = pending.splice(0, RECORD_GROUP);
        flushing = queue
          .record(orgId, endpointId, group)
          .then(() => group.forEach(count))
          .catch((error: unknown) => {
            failure ??= error;
          })
          .finally(() => {
            flushing = null;
            nudge.nudge();
          });
        return flushing.then(() => (pending.length > 0 ? flush() : undefined));
      };
      const enqueue = (record: AttemptRecord) => {
        pending.push(record);
        if (pending.length >= RECORD_GROUP) void flush();
        else flushTimer ??= setTimeout(() => void flush(), RECORD_DELAY_MS);
      };

      let lastTick = Date.now();
      const tick = async () => {
        context.heartbeat();
        endpoint = (await queue.leaseEndpoint(orgId, endpointId, DRAIN_LEASE_SECONDS)) ?? endpoint;
        await queue.reapLapsed(orgId, endpointId, schedule.length, ABANDONED_ERROR);
        lastTick = Date.now();
      };

      try {
        await queue.reapLapsed(orgId, endpointId, schedule.length, ABANDONED_ERROR);
        let lingerUntil: number | null = null;
        while (failure === undefined && !context.signal.aborted) {
          if (Date.now() - lastTick >= TICK_MS) await tick();
          const current = endpoint;
          const concurrency = config.webhooks.endpointConcurrency;
          const free = concurrency - inFlight;
          // Claim when half the window is free (or it is empty): fewer, larger claims.
          if (inFlight > 0 && free < Math.ceil(concurrency / 2)) {
            await nudge.wait(TICK_MS);
            continue;
          }
          const rows = await queue.claim(orgId, endpointId, current.enabled ? free : 500, ROW_LEASE_SECONDS);
          if (rows.length > 0) lingerUntil = null;
          if (!current.enabled) {
            await queue.finishWithoutAttempt(orgId, rows.map((r) => r.id), `the webhook endpoint is disabled${current.disabled_reason ? `: ${current.disabled_reason}` : ''}`);
            summary.exhausted += rows.length;
            if (rows.length > 0) continue;
          } else if (rows.length > 0) {
            const orphans = rows.filter((r) => r.event_type === null || r.api_version === null || r.event_created_ms === null);
            await queue.finishWithoutAttempt(orgId, orphans.map((r) => r.id), 'the event no longer exists');
            summary.exhausted += orphans.length;
            for (const row of rows) {
              if (orphans.includes(row)) continue;
              inFlight += 1;
              attempt(current, row)
                .then(enqueue, (error: unknown) => {
                  failure ??= error;
                })
                .finally(() => {
                  inFlight -= 1;
                  nudge.nudge();
                });
            }
            continue;
          }
          if (inFlight > 0) {
            await nudge.wait(TICK_MS);
            continue;
          }
          // Nothing due, nothing in flight: linger for a wake-up (or a retry falling due within it), then stop.
          await flush();
          lingerUntil ??= Date.now() + config.webhooks.drainLingerMs;
          const left = lingerUntil - Date.now();
          if (left <= 0 || failure !== undefined) break;
          const due = await queue.nextDue(orgId, endpointId);
          if (due !== null && due <= lingerUntil) {
            if (due > Date.now()) {
              await nudge.wait(due - Date.now());
              continue;
            }
            // Due already yet not claimed: an attempt whose lease lapsed, or a row another drain holds.
            if ((await queue.reapLapsed(orgId, endpointId, schedule.length, ABANDONED_ERROR)) > 0) continue;
            break;
          }
          await nudge.wait(Math.min(left, TICK_MS));
        }
        while (inFlight > 0) await nudge.wait(TICK_MS);
        await flush();
        if (failure !== undefined) throw failure instanceof Error ? failure : new Error('webhook drain failed', { cause: failure });
      } finally {
        clearTimeout(flushTimer);
        context.signal.removeEventListener('abort', onAbort);
        unsubscribe();
      }
      await queue.releaseEndpoint(orgId, endpointId);
      const state = await queue.state(orgId, endpointId);
      return {
        nextDueAt: state.next_due_ms === null ? null : Math.round(state.next_due_ms),
        open: state.open,
        delivered: summary.delivered,
        failed: summary.failed,
        exhausted: summary.exhausted,
        state: state.open === 0 ? 'idle' : summary.lastFailed ? 'failing' : 'retrying',
        lastOutcome: summary.lastOutcome,
      };
    },
  };
}

export type EndpointDrainer = ReturnType<typeof createEndpointDrainer>;
