import type { MikroORM } from '@mikro-orm/postgresql';
import type { DrainSummary } from '../../../workflows/queue-actor.ts';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import { createDrainer, type DrainContext, type DrainRun } from '../../queue/drainer.ts';
import { INBOUND_WAKE_CHANNEL, type QueueWakes } from '../../queue/wakes.ts';
import { INBOUND_INTAKE_LEASE } from '../../../workflows/inbound-intake.ts';
import { createInboundQueue, type ClaimedInbound, type InboundQueue } from './inbound-queue.repo.ts';
import type { InboundIngestion } from './ingestion.ts';

/**
 * One drain of the inbound queue, as the inbound actor's activity runs it in the drain frame
 * (src/queue/drainer.ts: the actor's drain lease, lingering, the report): keep up to
 * `queues.inboundConcurrency` raw messages in flight, each one attempt through the idempotent steps of ingestion.ts: record the
 * inbox messages (the last one's transaction marks the raw message ingested when no attachment
 * is pending), else store their attachments and mark the raw message ingested. A failed attempt is due again after a backoff (1 s doubling to 1 min) with its
 * error in `last_error`; the last attempt (INBOUND_MAX_ATTEMPTS) records the message even if
 * its report cannot be applied and settles unstored attachments as partial_failure, and if it
 * fails too the raw message is marked failed. A message no workspace owns is marked failed.
 *
 * A claimed message is due again when its lease lapses (refreshed while the attempt runs), so
 * a worker killed mid-batch loses nothing: the next drain runs the steps again, and they
 * finish what was started without duplicating it.
 */

export interface IntakeDrainDeps {
  orm: MikroORM;
  config: Pick<Config, 'queues'>;
  ingestion: InboundIngestion;
  wakes: QueueWakes;
  logger: Logger;
}

/** Attempts of a raw message before it is marked failed (as the per-message workflow had). */
export const INBOUND_MAX_ATTEMPTS = 6;
/** A claimed message's lease; extended every tick while its attempt runs. */
const MESSAGE_LEASE_SECONDS = 30;
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 60_000;

/** The delay before the attempt after `attempt` (1-based): 1 s doubling, at most 1 min. */
export function inboundRetryDelay(attempt: number): number {
  return Math.min(RETRY_FIRST_MS * 2 ** Math.max(0, attempt - 1), RETRY_MAX_MS);
}

/** The step's own error message rather than a wrapper's. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? error.cause.message : error.message;
}

/** One attempt at a claimed raw message, its outcome counted in the drain's run. */
function createIntakeAttempt({ ingestion, queue, logger }: Pick<IntakeDrainDeps, 'ingestion' | 'logger'> & { queue: InboundQueue }) {
  /** The steps of one attempt; resolves with the outcome counted in the drain's tally. */
  async function ingestOne(message: ClaimedInbound): Promise<'ingested' | 'failed' | 'settled'> {
    const final = message.attempt >= INBOUND_MAX_ATTEMPTS;
    const recorded = await ingestion.recordMessages(message.id, { final, started: message.raw });
    if (recorded.status === 'settled') return 'settled';
    if (recorded.status === 'unroutable') {
      await ingestion.markFailed(message.id, 'no workspace owns any recipient');
      return 'failed';
    }
    if (recorded.ingested) return 'ingested';
    if (recorded.attachmentsPending) await ingestion.storeAttachments(message.id, { final });
    await ingestion.markIngested(message.id);
    return 'ingested';
  }

  /** Runs one attempt; resolves true when it put the message back on the queue for a retry. */
  return async function attempt(message: ClaimedInbound, run: DrainRun): Promise<boolean> {
    const { tally } = run;
    try {
      const outcome = await ingestOne(message);
      if (outcome === 'ingested') tally.delivered += 1;
      if (outcome === 'failed') tally.exhausted += 1;
      tally.lastFailed = outcome === 'failed';
      tally.lastOutcome = outcome;
      run.count(outcome, message.dueMs);
      return false;
    } catch (error) {
      const reason = describe(error);
      tally.lastFailed = true;
      tally.lastOutcome = reason;
      if (message.attempt >= INBOUND_MAX_ATTEMPTS) {
        logger.warn('inbound ingestion failed on its last attempt', { inboundId: message.id, attempt: message.attempt, error: reason });
        await ingestion.markFailed(message.id, reason);
        tally.exhausted += 1;
        run.count('failed');
        return false;
      } else {
        logger.warn('inbound ingestion attempt failed; retried later', { inboundId: message.id, attempt: message.attempt, error: reason });
        await queue.retryLater(message.id, inboundRetryDelay(message.attempt), reason);
        tally.failed += 1;
        run.count('deferred');
        return true;
      }
    }
  };
}

/** The inbound actor's drain: the frame (src/queue/drainer.ts) with the inbound queue, its claim and the attempt above. */
export function createIntakeDrainer(deps: IntakeDrainDeps) {
  const queue = createInboundQueue(deps.orm);
  const attempt = createIntakeAttempt({ ...deps, queue });
  const drainer = createDrainer<null, ClaimedInbound>({
    pipeline: 'inbound',
    wakes: deps.wakes,
    wakeChannel: INBOUND_WAKE_CHANNEL,
    lingerMs: deps.config.queues.drainLingerMs,
    plan: (_owner, run) => {
      /**
       * When the next open row falls due, as the last claim that took rows read it (the rows it
       * took aside); undefined: unknown, nextDue reads it. New rows come with a wake-up (and a
       * claim); a retry this drain schedules forgets it.
       */
      let knownNextDue: number | null | undefined;
      return {
        ownerId: INBOUND_INTAKE_LEASE,
        concurrency: deps.config.queues.inboundConcurrency,
        // One actor owns the whole queue: its lease is always there to take.
        lease: (seconds) => queue.leaseActor(seconds).then(() => true),
        release: () => queue.releaseActor(),
        async claim(limit) {
          const { items, othersDueMs } = await queue.claim(limit, MESSAGE_LEASE_SECONDS);
          knownNextDue = othersDueMs;
          return { claimed: items.length, items };
        },
        async work(message) {
          if (await attempt(message, run)) knownNextDue = undefined;
        },
        extendLeases: (ids) => queue.extendLeases(ids, MESSAGE_LEASE_SECONDS),
        // Every received message is claimable once due: nothing else can hold one back (no recover).
        nextDue: () => (knownNextDue === undefined ? queue.nextDue() : Promise.resolve(knownNextDue)),
        // A new raw row NOTIFYs at its commit; a retry or a lapsed lease is found by nextDue.
        claimsAllDue: true,
        state: () => queue.state(),
      };
    },
  });
  return {
    /** Drains the due raw messages. Throws only for infrastructure failures (database). */
    drain: (context: DrainContext): Promise<DrainSummary> => drainer.drain(null, context),
  };
}
