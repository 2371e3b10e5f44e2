import { LRUCache } from 'lru-cache';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { WebhookDeliveryStatus } from '../../../db/entities/index.ts';
import type { DrainSummary, WebhookEndpointInput } from '../../../workflows/webhook-endpoint.ts';
import type { Config } from '../../config.ts';
import { decryptSecret } from '../../crypto/secret-box.ts';
import { clip, failureText, nextDelay } from './delivery.fns.ts';
import { ABANDONED_ERROR, sendDelivery } from './delivery-engine.ts';
import { createEndpointQueue, type AttemptRecord, type ClaimedDelivery, type LeasedEndpoint } from './endpoint-queue.repo.ts';
import { deliveriesTotal, deliveryLatency } from '../../metrics/metrics.ts';
import { drainSummary, drainWindow, newTally } from '../../queue/drain-window.ts';
import { createGroupCommit } from '../../queue/group-commit.ts';
import { WEBHOOK_WAKE_CHANNEL, type QueueWakes } from '../../queue/wakes.ts';
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
  config: Pick<Config, 'webhooks' | 'queues' | 'encryptionKey'>;
  wakes: QueueWakes;
  /** Overrides for the HTTP client (tests). */
  http?: Partial<PostOptions>;
}

/** The drain lease and a claimed row's lease: long enough for one 15 s attempt and a slow record. */
const DRAIN_LEASE_SECONDS = 30;
const ROW_LEASE_SECONDS = 30;
/** Lease refresh, heartbeat and a look for lapsed attempts, this often. */
const TICK_MS = 5_000;
/** Outcomes are committed in groups of up to this many, or after this long. */
export const RECORD_GROUP = 64;
const RECORD_DELAY_MS = 5;

type Outcome = 'delivered' | 'failed' | 'exhausted';

/**
 * Attempt records in group commits (src/queue/group-commit.ts): a group is written when it
 * reaches RECORD_GROUP records or RECORD_DELAY_MS after its first one, one group at a time. A
 * drain slot is free as soon as its record is handed over; `flush` waits for every record and
 * rejects if any write failed (the drain then stops; unrecorded attempts lapse and are retried
 * as abandoned).
 */
function createRecorder(write: (records: AttemptRecord[]) => Promise<void>, onRecorded: (record: AttemptRecord) => void) {
  const group = createGroupCommit(write, { maxItems: RECORD_GROUP, delayMs: RECORD_DELAY_MS });
  const writing = new Set<Promise<void>>();
  let failure: unknown;
  return {
    add(record: AttemptRecord): void {
      const recorded: Promise<void> = group
        .add(record)
        .then(
          () => onRecorded(record),
          (error: unknown) => {
            failure ??= error;
          },
        )
        .finally(() => writing.delete(recorded));
      writing.add(recorded);
    },
    async flush(): Promise<void> {
      await Promise.all([...writing]);
      if (failure !== undefined) throw failure instanceof Error ? failure : new Error('recording attempts failed', { cause: failure });
    },
  };
}

export function createEndpointDrainer(deps: EndpointDrainDeps) {
  const { orm, config, wakes } = deps;
  const queue = createEndpointQueue(orm);
  // Keyed by the sealed form: a rotated secret is a new entry; the least recently used go first.
  const secrets = new LRUCache<string, { opened: string | Error }>({ max: 10_000 });

  /** A sealed secret opened (cached by its sealed form), or why it cannot be. */
  function secretOf(sealed: string): string | Error {
    const cached = secrets.get(sealed);
    if (cached !== undefined) return cached.opened;
    let secret: string | Error;
    if (!config.encryptionKey) secret = new Error('HERALD_ENCRYPTION_KEY is not configured on the worker');
    else {
      try {
        secret = decryptSecret(config.encryptionKey, sealed);
      } catch {
        secret = new Error('the signing secret cannot be decrypted with HERALD_ENCRYPTION_KEY');
      }
    }
    secrets.set(sealed, { opened: secret });
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
      dueMs: row.due_ms,
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
    const secret = secretOf(endpoint.secret_encrypted);
    // A previous secret that cannot be opened only loses its extra signature.
    const previous = endpoint.previous_secret_encrypted ? secretOf(endpoint.previous_secret_encrypted) : null;
    const result: PostResult =
      secret instanceof Error
        ? { statusCode: null, headers: {}, excerpt: null, error: `not sent: ${secret.message}`, latencyMs: 0, address: null }
        : await sendDelivery({
            url: endpoint.url,
            secret,
            previousSecret: typeof previous === 'string' ? previous : null,
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
      const summary = newTally();
      const schedule = config.webhooks.retryScheduleMs;
      let endpoint = await queue.leaseEndpoint(orgId, endpointId, DRAIN_LEASE_SECONDS);
      if (!endpoint) {
        const ended = await queue.finishAllOpen(orgId, endpointId, 'the webhook endpoint no longer exists');
        return { nextDueAt: null, open: 0, delivered: 0, failed: 0, exhausted: ended, state: 'idle', lastOutcome: ended > 0 ? 'endpoint deleted' : null };
      }
      const recorder = createRecorder((records) => queue.record(orgId, endpointId, records), (record) => {
        const outcome: Outcome = record.status === 'delivered' ? 'delivered' : record.status === 'exhausted' ? 'exhausted' : 'failed';
        summary[outcome] += 1;
        deliveriesTotal.inc({ pipeline: 'webhooks', outcome });
        if (record.dueMs !== undefined) deliveryLatency.observe({ pipeline: 'webhooks' }, Math.max(0, Date.now() - record.dueMs) / 1000);
        summary.lastFailed = outcome !== 'delivered';
        summary.lastOutcome = record.statusCode !== null ? `HTTP ${record.statusCode}` : (record.error ?? outcome);
      });
      const reap = async () => (await queue.reapLapsed(orgId, endpointId, schedule.length, ABANDONED_ERROR)) > 0;

      await reap();
      await drainWindow<ClaimedDelivery>({
        concurrency: config.webhooks.endpointConcurrency,
        lingerMs: config.queues.drainLingerMs,
        tickMs: TICK_MS,
        signal: context.signal,
        subscribe: (onWake) => wakes.subscribe(WEBHOOK_WAKE_CHANNEL, endpointId, onWake),
        async claim(limit) {
          const current = endpoint!;
          const rows = await queue.claim(orgId, endpointId, current.enabled ? limit : 500, ROW_LEASE_SECONDS);
          if (!current.enabled) {
            await queue.finishWithoutAttempt(orgId, rows.map((r) => r.id), `the webhook endpoint is disabled${current.disabled_reason ? `: ${current.disabled_reason}` : ''}`);
            summary.exhausted += rows.length;
            return { claimed: rows.length, items: [] };
          }
          const orphans = rows.filter((r) => r.event_type === null || r.api_version === null || r.event_created_ms === null);
          await queue.finishWithoutAttempt(orgId, orphans.map((r) => r.id), 'the event no longer exists');
          summary.exhausted += orphans.length;
          return { claimed: rows.length, items: rows.filter((r) => !orphans.includes(r)) };
        },
        run: async (row) => recorder.add(await attempt(endpoint!, row)),
        async tick() {
          context.heartbeat();
          endpoint = (await queue.leaseEndpoint(orgId, endpointId, DRAIN_LEASE_SECONDS)) ?? endpoint;
          await reap();
        },
        settle: () => recorder.flush(),
        nextDue: () => queue.nextDue(orgId, endpointId),
        onDueUnclaimed: reap,
      });
      await queue.releaseEndpoint(orgId, endpointId);
      const state = await queue.state(orgId, endpointId);
      return drainSummary(summary, state);
    },
  };
}

export type EndpointDrainer = ReturnType<typeof createEndpointDrainer>;
