import { LRUCache } from 'lru-cache';
import type { RelayRecipientResult } from '../relay.ts';
import { shapingOutcomeOf } from './adaptive-relay.ts';
import type { DestinationShaper } from './destination-shaper.ts';

/** How long a message waits for a free slot of its destination before it is deferred (the drain's slot goes to other destinations). */
export const SLOT_WAIT_MS = 1_000;

/** The least a message held back by its destination waits before its next turn, so a full destination's messages do not spin through the drain. */
export const HOLD_MIN_MS = 1_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The last temporary refusal this worker saw from each destination, quoted in the deferrals its
 * back-off causes (as Postfix's "delivery temporarily suspended: <reason>"), so an email that
 * runs out of retries while its destination backs off still says why.
 */
const lastRefusals = new LRUCache<string, string>({ max: 10_000 });

function refusalOf(result: { results: RelayRecipientResult[]; response: string | null }): string | null {
  return result.response ?? result.results.find((r) => !r.accepted && r.response)?.response ?? null;
}

/**
 * Runs one domain's transaction inside its destination's budget: waits briefly for a slot, and
 * gives back a hold (`deferAll`: a temporary answer for every recipient, to be tried again after
 * `heldMs`, when the destination's pause ends or at least HOLD_MIN_MS on) when the destination is
 * backing off or stays full, so a slow or refusing destination never holds the drain's slots that
 * other destinations' messages need. A hold is Herald's own: no server was asked.
 */
export async function inDestinationSlot(
  shaper: DestinationShaper,
  destination: string,
  run: () => Promise<{ results: RelayRecipientResult[]; response: string | null }>,
  deferAll: (response: string, heldMs: number) => { results: RelayRecipientResult[]; response: string | null },
): Promise<{ results: RelayRecipientResult[]; response: string | null }> {
  const started = Date.now();
  for (;;) {
    const decision = await shaper.acquire(destination);
    if (decision.kind === 'granted') {
      let result: { results: RelayRecipientResult[]; response: string | null } | null = null;
      try {
        result = await run();
        return result;
      } finally {
        const outcome = result ? shapingOutcomeOf({ kind: 'recipients', recipients: result.results }) : 'ignored';
        const refusal = result && outcome === 'temporary' ? refusalOf(result) : null;
        if (refusal) lastRefusals.set(destination, refusal);
        decision.release(outcome);
      }
    }
    const waited = Date.now() - started;
    if (decision.backingOff || waited + decision.retryInMs > SLOT_WAIT_MS) {
      const why = decision.backingOff
        ? `backing off after temporary refusals, for ${Math.ceil(decision.retryInMs / 1000)} s more`
        : 'at its connection or rate limit';
      const last = decision.backingOff ? lastRefusals.get(destination) : undefined;
      const response = `4.4.5 deferred by Herald: destination ${destination} is ${why}${last ? ` (last refusal: ${last})` : ''}`;
      return deferAll(response, Math.max(HOLD_MIN_MS, decision.retryInMs));
    }
    await sleep(Math.max(10, Math.min(decision.retryInMs, 100)));
  }
}
