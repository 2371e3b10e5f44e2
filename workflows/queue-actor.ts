import {
  condition,
  setCurrentDetails,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
  type SignalDefinition,
} from '@temporalio/workflow';
import { HeraldDeliveryStatus } from './search-attributes.ts';

/**
 * The loop every queue actor runs (a webhook endpoint's, a sending domain's): its items are
 * PostgreSQL rows and the actor owns no item state. It drains due rows in one activity, shows
 * the queue (HeraldDeliveryStatus, memo, current details), then sleeps until the next due row
 * or a wake signal, and continues as new before its history grows large.
 */

/** What one drain reports back. */
export interface DrainSummary {
  /** Epoch ms of the next due row (a retry, a scheduled send, a lease to lapse); null when none is open. */
  nextDueAt: number | null;
  /** Rows still open when the drain returned. */
  open: number;
  delivered: number;
  failed: number;
  exhausted: number;
  /** idle: nothing open; retrying: open rows wait for their time; failing: the last attempts failed. */
  state: 'idle' | 'retrying' | 'failing';
  lastOutcome: string | null;
}

/** With nothing open, an actor closes after this long without a wake (signal-with-start reopens it). */
const IDLE_CLOSE_MS = 10 * 60_000;
/** Drains per run before continuing as new (each is a handful of history events). */
const DRAINS_PER_RUN = 500;

/**
 * Runs the actor until it has been idle for IDLE_CLOSE_MS (returns the last summary) or until
 * its run is long enough to continue as new (calls `continueAsNew`, which does not return).
 */
export async function runQueueActor(options: {
  wake: SignalDefinition;
  drain: () => Promise<DrainSummary>;
  continueAsNew: () => Promise<never>;
}): Promise<DrainSummary | null> {
  let woken = true;
  setHandler(options.wake, () => {
    woken = true;
  });
  let shownState: string | null = null;
  let last: DrainSummary | null = null;
  for (let drains = 0; drains < DRAINS_PER_RUN && !workflowInfo().continueAsNewSuggested; drains += 1) {
    woken = false;
    last = await options.drain();
    const nextDue = last.nextDueAt === null ? 'none' : new Date(last.nextDueAt).toISOString();
    setCurrentDetails(
      `open ${last.open}; last drain: ${last.delivered} delivered, ${last.failed} failed, ${last.exhausted} ended; next due ${nextDue}`,
    );
    if (last.state !== shownState) {
      shownState = last.state;
      upsertSearchAttributes([{ key: HeraldDeliveryStatus, value: last.state }]);
      upsertMemo({ queue: { state: last.state, open: last.open, lastOutcome: last.lastOutcome } });
    }
    if (woken) continue;
    if (last.nextDueAt === null) {
      if (!(await condition(() => woken, IDLE_CLOSE_MS))) return last;
    } else {
      const wait = last.nextDueAt - Date.now();
      if (wait > 0) await condition(() => woken, wait);
    }
  }
  return options.continueAsNew();
}
