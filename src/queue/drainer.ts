import type { DrainSummary } from '../../workflows/queue-actor.ts';
import { deliveriesTotal, deliveryLatency, type Pipeline } from '../metrics/metrics.ts';
import { drainWindow } from './drain-window.ts';
import type { QueueWakes, WakeChannel } from './wakes.ts';

/**
 * The frame every queue drain runs (a sending domain's, a webhook endpoint's, the inbound
 * intake's; see CONTRIBUTING.md, "Adding a queue actor"):
 *
 * 1. take the owner's drain lease (writers then know it is awake and do not signal it);
 * 2. run the in-flight window (drain-window.ts) over the items the plan claims, each through
 *    the plan's work; every TICK_MS heartbeat, renew the drain lease and the leases of the items
 *    in flight, and let the plan recover attempts whose drain died;
 * 3. once nothing is due, linger for a wake-up (NOTIFY through wakes.ts) or a row falling due;
 * 4. release the lease, then read the queue for the actor's DrainSummary: read after the
 *    release, a row committed while a writer still saw the lease is counted as due now.
 *
 * A plan brings its owner's queue, its claim and its work, and counts each outcome it settles
 * through `DrainRun.count` (herald_deliveries_total, herald_delivery_latency_seconds) and its
 * tally. A drain that throws (an infrastructure failure) leaves its lease to lapse.
 */

/** The owner's drain lease: renewed every tick, so it lapses soon after a drain dies. */
const DRAIN_LEASE_SECONDS = 30;
/** Heartbeat, lease renewal and recovery, this often. */
const TICK_MS = 5_000;

export interface DrainContext {
  /** Called at least every few seconds while the drain works. */
  heartbeat(): void;
  /** Aborted when the activity is cancelled or the worker shuts down: stop claiming, finish what is in flight. */
  signal: AbortSignal;
}

/** What a drain counted while it ran. */
export interface DrainTally {
  delivered: number;
  failed: number;
  exhausted: number;
  lastOutcome: string | null;
  /** The last attempt did not succeed. */
  lastFailed: boolean;
}

export function newTally(): DrainTally {
  return { delivered: 0, failed: 0, exhausted: 0, lastOutcome: null, lastFailed: false };
}

/** An owner's queue as its drain left it: open rows and when the next one falls due. */
export interface QueueState {
  next_due_ms: number | null;
  open: number;
}

/** The report a drain returns to its actor: what it did, and its queue after it released its lease. */
export function drainSummary(tally: DrainTally, queue: QueueState): DrainSummary {
  return {
    nextDueAt: queue.next_due_ms === null ? null : Math.round(queue.next_due_ms),
    open: queue.open,
    delivered: tally.delivered,
    failed: tally.failed,
    exhausted: tally.exhausted,
    state: queue.open === 0 ? 'idle' : tally.lastFailed ? 'failing' : 'retrying',
    lastOutcome: tally.lastOutcome,
  };
}

/** The report of a drain whose owner is gone: nothing left open, `ended` rows closed on the way out. */
export function ownerGoneSummary(lastOutcome: string | null, ended = 0): DrainSummary {
  return { nextDueAt: null, open: 0, delivered: 0, failed: 0, exhausted: ended, state: 'idle', lastOutcome };
}

/** What the frame hands a plan for its accounting. */
export interface DrainRun {
  readonly tally: DrainTally;
  /** One attempt's outcome in herald_deliveries_total, and with `dueMs` its latency since it fell due. */
  count(outcome: string, dueMs?: number): void;
}

/** One drain of one owner's queue: what a drainer plugs into the frame. */
export interface DrainPlan<Item extends { id: string }> {
  /** The owner's id in wake-ups (the NOTIFY payload on the drainer's channel). */
  ownerId: string;
  /** Items in flight at most. */
  concurrency: number;
  /** Takes or renews the owner's drain lease for `seconds`; false when the owner no longer exists. */
  lease(seconds: number): Promise<boolean>;
  release(): Promise<void>;
  /** The report when the lease cannot be taken at the start (default: idle, nothing said). */
  ownerGone?(): Promise<DrainSummary>;
  /** Claims up to `limit` due rows: `claimed` rows left the queue, `items` of them are to be worked. */
  claim(limit: number): Promise<{ claimed: number; items: Item[] }>;
  /** One attempt at one item, its outcome counted; a rejection stops the drain (after the items in flight). */
  work(item: Item): Promise<void>;
  /** Renews the leases of the items in flight (by id), every tick. */
  extendLeases?(ids: string[]): Promise<void>;
  /** Settles attempts whose drain died (lease lapsed); true when it did something. At the start, every tick and when a due row was not claimed. */
  recover?(): Promise<boolean>;
  /** Commits what the work buffered: before lingering and at the end. */
  settle?(): Promise<void>;
  /** Epoch ms when the owner's next open row falls due, or null. */
  nextDue(): Promise<number | null>;
  state(): Promise<QueueState>;
  /** See drain-window.ts DrainWindowOptions.claimsAllDue. */
  claimsAllDue?: boolean;
}

export interface DrainerOptions<Input, Item extends { id: string }> {
  /** The metrics label of the drainer's outcomes. */
  pipeline: Pipeline;
  wakes: QueueWakes;
  wakeChannel: WakeChannel;
  lingerMs: number;
  /** The plan of one drain of `input`'s owner; per-drain state lives in its closure. */
  plan(input: Input, run: DrainRun): DrainPlan<Item>;
}

export interface Drainer<Input> {
  /** Drains the owner's due rows. Throws only for infrastructure failures. */
  drain(input: Input, context: DrainContext): Promise<DrainSummary>;
}

function runFor(pipeline: Pipeline, tally: DrainTally): DrainRun {
  return {
    tally,
    count(outcome, dueMs) {
      deliveriesTotal.inc({ pipeline, outcome });
      if (dueMs !== undefined) deliveryLatency.observe({ pipeline }, Math.max(0, Date.now() - dueMs) / 1000);
    },
  };
}

export function createDrainer<Input, Item extends { id: string }>(options: DrainerOptions<Input, Item>): Drainer<Input> {
  const { pipeline, wakes, wakeChannel, lingerMs } = options;
  return {
    async drain(input, context) {
      const tally = newTally();
      const plan = options.plan(input, runFor(pipeline, tally));
      if (!(await plan.lease(DRAIN_LEASE_SECONDS))) return plan.ownerGone ? plan.ownerGone() : ownerGoneSummary(null);
      const inFlight = new Set<string>();
      const recover = () => (plan.recover ? plan.recover() : Promise.resolve(false));
      await recover();
      await drainWindow<Item>({
        concurrency: plan.concurrency,
        lingerMs,
        tickMs: TICK_MS,
        signal: context.signal,
        subscribe: (onWake) => wakes.subscribe(wakeChannel, plan.ownerId, onWake),
        claim: (limit) => plan.claim(limit),
        async run(item) {
          inFlight.add(item.id);
          try {
            await plan.work(item);
          } finally {
            inFlight.delete(item.id);
          }
        },
        async tick() {
          context.heartbeat();
          await plan.lease(DRAIN_LEASE_SECONDS);
          await plan.extendLeases?.([...inFlight]);
          await recover();
        },
        settle: () => (plan.settle ? plan.settle() : Promise.resolve()),
        nextDue: () => plan.nextDue(),
        onDueUnclaimed: recover,
        claimsAllDue: plan.claimsAllDue ?? false,
      });
      await plan.release();
      return drainSummary(tally, await plan.state());
    },
  };
}
