import {
  condition,
  continueAsNew,
  defineSignal,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';

/**
 * The contract of a webhook endpoint's actor, written once: src/ imports these (the signal and
 * id builder are plain values that need no workflow context).
 */
export const WEBHOOK_ENDPOINT_WORKFLOW = 'webhookEndpointActor';
export const WEBHOOK_ENDPOINT_KIND = 'webhook-endpoint';

/** "There may be due rows": sets a flag, nothing more; many wakes before the next drain are one. */
export const wakeEndpointSignal = defineSignal('wake');

export interface WebhookEndpointInput {
  orgId: string;
  endpointId: string;
}

export function webhookEndpointWorkflowId(endpointId: string): string {
  return `webhook-endpoint:${endpointId}`;
}

/** What one drain reports back (activities/webhooks.ts `drainWebhookEndpoint`). */
export interface DrainSummary {
  /** Epoch ms of the endpoint's next due row (a retry, a lease to expire); null when none is open. */
  nextDueAt: number | null;
  /** Rows still open (queued, failed, delivering) when the drain returned. */
  open: number;
  delivered: number;
  failed: number;
  exhausted: number;
  /** idle: nothing open; retrying: open rows wait for a retry; failing: the last attempts failed. */
  state: 'idle' | 'retrying' | 'failing';
  lastOutcome: string | null;
}

/**
 * A drain claims and delivers until nothing is due, then lingers briefly for new rows (woken
 * in-process through PostgreSQL NOTIFY) before it returns; it heartbeats while it works, so a
 * worker killed mid-batch is noticed within the heartbeat timeout and the drain runs again
 * elsewhere (the dead one's claimed rows lapse and are retried as abandoned attempts).
 */
const { drainWebhookEndpoint } = proxyActivities<Activities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

/** With nothing open, the actor closes after this long without a wake (signal-with-start reopens it). */
const IDLE_CLOSE_MS = 10 * 60_000;
/** Drains per run before continuing as new (each is a handful of history events). */
const DRAINS_PER_RUN = 500;

/**
 * webhookEndpointActor — id `webhook-endpoint:<endpointId>`, task queue herald-webhooks,
 * HeraldOrgId / HeraldKind = webhook-endpoint / HeraldDeliveryStatus = idle | retrying | failing.
 * The endpoint's deliveries are rows (webhook_deliveries); this workflow owns no item state. It
 * drains due rows in one activity, then sleeps until the next due row or a wake signal, and
 * continues as new before its history grows large. Started and woken by signal-with-start from
 * the fan-out, replays and the reconciler; an operator reads the queue in the memo and details.
 */
export async function webhookEndpointActor(input: WebhookEndpointInput): Promise<DrainSummary | null> {
  let woken = true;
  setHandler(wakeEndpointSignal, () => {
    woken = true;
  });
  let shownState: string | null = null;
  let last: DrainSummary | null = null;
  for (let drains = 0; drains < DRAINS_PER_RUN && !workflowInfo().continueAsNewSuggested; drains += 1) {
    woken = false;
    last = await drainWebhookEndpoint(input);
    const details = `open ${last.open}; last drain: ${last.delivered} delivered, ${last.failed} failed, ${last.exhausted} exhausted; next due ${last.nextDueAt === null ? 'none' : new Date(last.nextDueAt).toISOString()}`;
    setCurrentDetails(details);
    if (last.state !== shownState) {
      shownState = last.state;
      upsertSearchAttributes([{ key: { name: 'HeraldDeliveryStatus', type: 'KEYWORD' }, value: last.state }]);
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
  return continueAsNew<typeof webhookEndpointActor>(input);
}
