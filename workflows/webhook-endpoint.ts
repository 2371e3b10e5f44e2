import { continueAsNew, defineSignal, proxyActivities } from '@temporalio/workflow';
import type { ActorContract } from './actor-contract.ts';
import { runQueueActor, type DrainSummary } from './queue-actor.ts';

export type { DrainSummary } from './queue-actor.ts';

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
  return `${WEBHOOK_ENDPOINT_KIND}:${endpointId}`;
}

export const webhookEndpointActorContract: ActorContract<WebhookEndpointInput> = {
  workflowType: WEBHOOK_ENDPOINT_WORKFLOW,
  kind: WEBHOOK_ENDPOINT_KIND,
  workflowId: (input) => webhookEndpointWorkflowId(input.endpointId),
  orgIdOf: (input) => input.orgId,
  wake: wakeEndpointSignal,
};

/** The actor's one activity (activities/ implements it through the drainer). */
export interface WebhookEndpointActivities {
  drainWebhookEndpoint(input: WebhookEndpointInput): Promise<DrainSummary>;
}

/**
 * A drain claims and delivers until nothing is due, then lingers briefly for new rows (woken
 * in-process through PostgreSQL NOTIFY) before it returns; it heartbeats while it works, so a
 * worker killed mid-batch is noticed within the heartbeat timeout and the drain runs again
 * elsewhere (the dead one's claimed rows lapse and are retried as abandoned attempts).
 */
const { drainWebhookEndpoint } = proxyActivities<WebhookEndpointActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

/**
 * webhookEndpointActor — id `webhook-endpoint:<endpointId>`, task queue herald-main,
 * HeraldOrgId / HeraldKind = webhook-endpoint / HeraldDeliveryStatus = idle | retrying | failing.
 * The endpoint's deliveries are rows (webhook_deliveries), drained by the loop of
 * queue-actor.ts. Started and woken by signal-with-start from the fan-out, replays and the
 * reconciler; an operator reads the queue in the memo and current details.
 */
export async function webhookEndpointActor(input: WebhookEndpointInput): Promise<DrainSummary | null> {
  return runQueueActor({
    wake: wakeEndpointSignal,
    drain: () => drainWebhookEndpoint(input),
    continueAsNew: () => continueAsNew<typeof webhookEndpointActor>(input),
  });
}
