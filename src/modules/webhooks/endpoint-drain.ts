import { LRUCache } from 'lru-cache';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { WebhookDeliveryStatus } from '../../../db/entities/index.ts';
import type { WebhookEndpointInput } from '../../../workflows/webhook-endpoint.ts';
import type { Config } from '../../config.ts';
import { decryptSecret } from '../../crypto/secret-box.ts';
import { clip, failureText, nextDelay } from './delivery.fns.ts';
import { ABANDONED_ERROR, sendDelivery } from './delivery-engine.ts';
import { ENDPOINT_DELETED_ERROR } from './webhook-endpoint.fns.ts';
import {
  createEndpointQueue,
  type AttemptRecord,
  type ClaimedDelivery,
  type EndpointQueue,
  type LeasedEndpoint,
  type OwnedAttemptRecord,
} from './endpoint-queue.repo.ts';
import { createDrainer, ownerGoneSummary, type Drainer, type DrainRun } from '../../queue/drainer.ts';
import { createGroupCommit, type GroupCommit } from '../../queue/group-commit.ts';
import { createClaimAhead } from './claim-ahead.ts';
import { WEBHOOK_WAKE_CHANNEL, type QueueWakes } from '../../queue/wakes.ts';
import { retryAfterMs, type PostOptions, type PostResult } from './webhook-http.ts';

/**
 * One drain of a webhook endpoint's queue, as the endpoint actor's activity runs it in the drain
 * frame (src/queue/drainer.ts: the endpoint's drain lease, which also loads the endpoint;
 * lingering for a wake-up from the fan-out; the report read after the release):
 *
 * 1. Record attempts that a dead drain left in flight as abandoned (at the start, every tick,
 *    and when a due row could not be claimed).
 * 2. Keep up to `endpointConcurrency` requests in flight, sending due rows (`FOR UPDATE SKIP
 *    LOCKED`, oldest due first) as slots free up, claimed ahead of the slots at least
 *    CLAIM_BATCH at a time (claim-ahead.ts: `delivering` means in flight or next in line; what is
 *    still in line when the drain ends goes back to the queue); a slow endpoint holds only its
 *    own slots.
 * 3. Record outcomes in the worker's group commits (one statement per group, shared by every
 *    endpoint drain of the process): delivered (2xx), failed with `next_attempt_at` (the
 *    schedule's delay ±20 %, or Retry-After), exhausted (last attempt, 410 Gone, which also
 *    disables the endpoint).
 *
 * Delivery is at least once: a request whose answer was not recorded (the worker died) is sent
 * again after its lease lapses, with the same delivery id; the attempt log shows the abandoned
 * attempt. Order: oldest due first with up to `endpointConcurrency` in flight, so receivers must
 * not rely on arrival order (events carry created_at).
 */

export interface EndpointDrainDeps {
  orm: MikroORM;
  config: Pick<Config, 'webhooks' | 'queues' | 'encryptionKeys'>;
  wakes: QueueWakes;
  /** Overrides for the HTTP client (tests). */
  http?: Partial<PostOptions>;
}

/** How long rows claimed ahead are sent on the endpoint as last seen before it is read again (deleted, disabled). */
const ENDPOINT_RECHECK_MS = 1_000;
/** The drain lease a re-read renews (as the frame's does). */
const DRAIN_LEASE_SECONDS = 30;
/** A claimed row's lease: long enough for one 15 s attempt and a slow record. */
const ROW_LEASE_SECONDS = 30;
/** Outcomes (of all the process's endpoint drains) are committed in groups of up to this many, or after this long. */
export const RECORD_GROUP = 128;
const RECORD_DELAY_MS = 10;

type Outcome = 'delivered' | 'failed' | 'exhausted';

/**
 * A drain's attempt records, handed to the worker's one group commit of attempt records
 * (src/queue/group-commit.ts, shared by every endpoint drain of the process, so one statement
 * records the attempts of several endpoints: a group is written when it reaches RECORD_GROUP
 * records or RECORD_DELAY_MS after its first one, one group at a time). A drain slot is free as
 * soon as its record is handed over; `flush` waits for this drain's records and rejects if any
 * write failed (the drain then stops; unrecorded attempts lapse and are retried as abandoned).
 */
function createRecorder(group: GroupCommit<OwnedAttemptRecord>, owner: WebhookEndpointInput, onRecorded: (record: AttemptRecord) => void) {
  const writing = new Set<Promise<void>>();
  let failure: unknown;
  return {
    add(record: AttemptRecord): void {
      const recorded: Promise<void> = group
        .add({ ...record, orgId: owner.orgId, endpointId: owner.endpointId })
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

/** Opens sealed signing secrets, cached by their sealed form (a rotated secret is a new entry; the least recently used go first). */
function createSecretOpener(encryptionKeys: Config['encryptionKeys']) {
  const secrets = new LRUCache<string, { opened: string | Error }>({ max: 10_000 });
  /** A sealed secret opened, or why it cannot be. */
  return function secretOf(sealed: string): string | Error {
    const cached = secrets.get(sealed);
    if (cached !== undefined) return cached.opened;
    let secret: string | Error;
    if (encryptionKeys.length === 0) secret = new Error('HERALD_ENCRYPTION_KEY is not configured on the worker');
    else {
      try {
        secret = decryptSecret(encryptionKeys, sealed);
      } catch {
        secret = new Error('the signing secret cannot be decrypted with HERALD_ENCRYPTION_KEY');
      }
    }
    secrets.set(sealed, { opened: secret });
    return secret;
  };
}

/** The record of one attempt from its HTTP result. */
function outcomeOf(schedule: readonly number[], row: ClaimedDelivery, startedAt: Date, result: PostResult): AttemptRecord {
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

/** One POST of a claimed delivery to its endpoint, as the record of its attempt. */
function createDeliveryAttempt(deps: Pick<EndpointDrainDeps, 'config' | 'http'>) {
  const { config } = deps;
  const secretOf = createSecretOpener(config.encryptionKeys);
  return async function attempt(endpoint: LeasedEndpoint, row: ClaimedDelivery): Promise<AttemptRecord> {
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
    return outcomeOf(config.webhooks.retryScheduleMs, row, startedAt, result);
  };
}

/** A recorded attempt in the drain's run: its outcome counted, its latency observed. */
function countRecord(record: AttemptRecord, run: DrainRun): void {
  const outcome: Outcome = record.status === 'delivered' ? 'delivered' : record.status === 'exhausted' ? 'exhausted' : 'failed';
  run.tally[outcome] += 1;
  run.count(outcome, record.dueMs);
  run.tally.lastFailed = outcome !== 'delivered';
  run.tally.lastOutcome = record.statusCode !== null ? `HTTP ${record.statusCode}` : (record.error ?? outcome);
}

/** Claimed rows that end exhausted without an attempt, counted. */
async function endWithoutAttempt(queue: EndpointQueue, orgId: string, rows: readonly ClaimedDelivery[], reason: string, run: DrainRun) {
  await queue.finishWithoutAttempt(
    orgId,
    rows.map((r) => r.id),
    reason,
  );
  run.tally.exhausted += rows.length;
}

function disabledText(endpoint: LeasedEndpoint): string {
  return `the webhook endpoint is disabled${endpoint.disabled_reason ? `: ${endpoint.disabled_reason}` : ''}`;
}

/**
 * Claims due rows for the endpoint as it was last leased: a disabled endpoint's rows end without
 * an attempt (up to 500 at a time); rows whose event no longer exists end too; the rest are sent.
 */
async function claimDeliveries(
  queue: EndpointQueue,
  owner: { orgId: string; endpointId: string },
  endpoint: LeasedEndpoint,
  limit: number,
  run: DrainRun,
) {
  const { orgId, endpointId } = owner;
  const rows = await queue.claim(orgId, endpointId, endpoint.enabled ? limit : 500, ROW_LEASE_SECONDS);
  if (!endpoint.enabled) {
    await endWithoutAttempt(queue, orgId, rows, disabledText(endpoint), run);
    return { claimed: rows.length, items: [] };
  }
  const orphans = rows.filter((r) => r.event_type === null || r.api_version === null || r.event_created_ms === null);
  await endWithoutAttempt(queue, orgId, orphans, 'the event no longer exists', run);
  return { claimed: rows.length, items: rows.filter((r) => !orphans.includes(r)) };
}

/** The endpoint's drain: the frame (src/queue/drainer.ts) with the endpoint's queue, its claim, the attempt and the recorder above. */
export function createEndpointDrainer(deps: EndpointDrainDeps): Drainer<WebhookEndpointInput> {
  const { orm, config, wakes } = deps;
  const queue = createEndpointQueue(orm);
  const attempt = createDeliveryAttempt(deps);
  const records = createGroupCommit<OwnedAttemptRecord>((group) => queue.recordMany(group), {
    maxItems: RECORD_GROUP,
    delayMs: RECORD_DELAY_MS,
  });
  return createDrainer<WebhookEndpointInput, ClaimedDelivery>({
    pipeline: 'webhooks',
    wakes,
    wakeChannel: WEBHOOK_WAKE_CHANNEL,
    lingerMs: config.queues.drainLingerMs,
    plan(owner, run) {
      const { orgId, endpointId } = owner;
      // Set by the first lease; a renewal that finds the endpoint gone keeps the last one seen.
      let endpoint: LeasedEndpoint | null = null;
      let gone = false;
      let leasedAt = 0;
      const lease = async (seconds: number) => {
        const leased = await queue.leaseEndpoint(orgId, endpointId, seconds);
        endpoint = leased ?? endpoint;
        gone = leased === null;
        leasedAt = Date.now();
        return leased !== null;
      };
      const recorder = createRecorder(records, owner, (record) => countRecord(record, run));
      const ahead = createClaimAhead<ClaimedDelivery>({
        claim: (limit) => claimDeliveries(queue, owner, endpoint!, limit, run),
        unclaim: (rows) => queue.unclaim(orgId, rows),
      });
      return {
        ownerId: endpointId,
        concurrency: config.webhooks.endpointConcurrency,
        lease,
        release: () => queue.releaseEndpoint(orgId, endpointId),
        async ownerGone() {
          const ended = await queue.finishAllOpen(orgId, endpointId, 'the webhook endpoint no longer exists');
          return ownerGoneSummary(ended > 0 ? 'endpoint deleted' : null, ended);
        },
        async claim(limit) {
          // Rows in line are sent only to an endpoint seen within ENDPOINT_RECHECK_MS: deleted or
          // disabled since, they end without a request, as the next claim's rows would.
          if (ahead.waiting().length > 0 && Date.now() - leasedAt >= ENDPOINT_RECHECK_MS) await lease(DRAIN_LEASE_SECONDS);
          if (gone) await ahead.drop((rows) => endWithoutAttempt(queue, orgId, rows, ENDPOINT_DELETED_ERROR, run));
          else if (!endpoint!.enabled) await ahead.drop((rows) => endWithoutAttempt(queue, orgId, rows, disabledText(endpoint!), run));
          return ahead.take(limit);
        },
        extendLeases: (ids) => queue.extendLeases(orgId, [...ids, ...ahead.waiting().map((r) => r.id)], ROW_LEASE_SECONDS),
        work: async (row) => recorder.add(await attempt(endpoint!, row)),
        recover: async () => (await queue.reapLapsed(orgId, endpointId, config.webhooks.retryScheduleMs.length, ABANDONED_ERROR)) > 0,
        async settle() {
          await recorder.flush();
          await ahead.giveBack();
        },
        nextDue: () => queue.nextDue(orgId, endpointId),
        state: () => queue.state(orgId, endpointId),
      };
    },
  });
}

export type EndpointDrainer = ReturnType<typeof createEndpointDrainer>;
