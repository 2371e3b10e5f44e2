import { continueAsNew, proxyLocalActivities, sleep, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { HeraldDeliveryStatus } from './search-attributes.ts';

/**
 * Legacy: the per-delivery workflow of the design before endpoint actors
 * (workflows/webhook-endpoint.ts). Nothing starts it any more; it stays registered so runs
 * started before an upgrade finish: their next attempt's activity hands the delivery to its
 * endpoint's actor and answers `stopped` (src/modules/webhooks/delivery-engine.ts), and the run
 * ends. Its code is unchanged so recorded histories replay.
 *
 * Each attempt is a local activity: it runs in the worker that runs the workflow task and is
 * recorded in history as a marker, so a delivery costs the Temporal server one start and one
 * workflow task instead of a round trip per activity (about twice the throughput on the dev
 * server; see bench/webhooks.ts). The receiver's answer is the activity's result, never its
 * failure, so retries here only cover infrastructure (the database down). If the worker dies
 * mid-attempt, the workflow task times out and another worker runs the activity again; the
 * engine records that attempt as abandoned (the request may have gone out: at least once) and
 * answers `retry` with no delay, so the next attempt follows at once. A recorded attempt is never
 * sent again. An attempt is 15 s of HTTP at most.
 */
const { attemptWebhookDelivery } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

type AttemptResult = Awaited<ReturnType<Activities['attemptWebhookDelivery']>>;
type DeliveryStatus = NonNullable<AttemptResult['status']>;

export const DELIVER_WEBHOOK_WORKFLOW = 'deliverWebhook';

/** `webhook-delivery:<deliveryId>`, `:replay-<n>` for replay series n. */
export function deliveryWorkflowId(deliveryId: string, series: number): string {
  return series === 0 ? `webhook-delivery:${deliveryId}` : `webhook-delivery:${deliveryId}:replay-${series}`;
}

export interface DeliverWebhookInput {
  orgId: string;
  deliveryId: string;
  series: number;
  /** Set only by continue-as-new: where the series stands. */
  resume?: { attemptNumber: number; schedule: number[] | null; busyStreak: number };
}

export interface DeliverWebhookResult {
  deliveryId: string;
  series: number;
  outcome: AttemptResult['outcome'];
  status: DeliveryStatus | null;
  attempts: number;
}

/** Waits while the endpoint is at its concurrency limit: 0.5 s doubling to 30 s, jittered. */
const BUSY_BASE_MS = 500;
const BUSY_MAX_MS = 30_000;
/** Long busy stretches would grow the history: continue as new past this many events. */
const HISTORY_LIMIT = 2_000;


/** ±20 % (workflow Math.random is deterministic on replay). */
function jitter(): number {
  return 0.8 + Math.random() * 0.4;
}

/**
 * deliverWebhook — id `webhook-delivery:<deliveryId>` (`:replay-<n>` for replay n), task queue
 * herald-webhooks, HeraldOrgId / HeraldKind = webhook-delivery / HeraldDeliveryStatus (kept up to
 * date). Delivers one WebhookDelivery row for one attempt series: attempt 1 at once, then after
 * each failure the schedule's next delay (WEBHOOK_RETRY_SCHEDULE, fixed by the first attempt,
 * ±20 % jitter, or the receiver's Retry-After) as a durable timer, until delivered (2xx) or
 * exhausted (the last attempt failed, 410 Gone, endpoint disabled). Every attempt is recorded by
 * its activity. A run that finds its series superseded by a replay, or the row final, stops.
 */
export async function deliverWebhook(input: DeliverWebhookInput): Promise<DeliverWebhookResult> {
  const { orgId, deliveryId, series } = input;
  let attemptNumber = input.resume?.attemptNumber ?? 1;
  let schedule = input.resume?.schedule ?? null;
  let busyStreak = input.resume?.busyStreak ?? 0;
  // Started with HeraldDeliveryStatus = queued; upserted when an attempt changes it (the short
  // `delivering` phase is visible on the delivery row, not worth a visibility write).
  let shown: DeliveryStatus = 'queued';
  const show = (status: DeliveryStatus | null) => {
    if (status === null || status === 'delivering' || status === shown) return;
    shown = status;
    upsertSearchAttributes([{ key: HeraldDeliveryStatus, value: status }]);
  };
  for (;;) {
    if (workflowInfo().historyLength > HISTORY_LIMIT) {
      return continueAsNew<typeof deliverWebhook>({ orgId, deliveryId, series, resume: { attemptNumber, schedule, busyStreak } });
    }
    const result = await attemptWebhookDelivery({ orgId, deliveryId, series, attemptNumber, schedule, jitter: jitter() });
    schedule = result.schedule;
    show(result.status);
    if (result.outcome === 'busy') {
      busyStreak += 1;
      await sleep(Math.round(Math.min(BUSY_MAX_MS, BUSY_BASE_MS * 2 ** (busyStreak - 1)) * jitter()));
      continue;
    }
    busyStreak = 0;
    if (result.outcome !== 'retry') {
      return { deliveryId, series, outcome: result.outcome, status: result.status, attempts: attemptNumber };
    }
    if (result.nextDelayMs !== null && result.nextDelayMs > 0) await sleep(result.nextDelayMs);
    attemptNumber += 1;
  }
}
