import { continueAsNew, defineSignal, proxyActivities } from '@temporalio/workflow';
import type { ActorContract } from './actor-contract.ts';
import { runQueueActor, type DrainSummary } from './queue-actor.ts';

/**
 * The contract of a sending domain's actor, written once: src/ imports these (the signal and
 * id builder are plain values that need no workflow context).
 */
export const SEND_DOMAIN_WORKFLOW = 'sendDomainActor';
export const SEND_DOMAIN_KIND = 'send-domain';

/** "There may be due emails": sets a flag; many wakes before the next drain are one. */
export const wakeDomainSignal = defineSignal('wake');

export interface SendDomainInput {
  orgId: string;
  domainId: string;
}

export function sendDomainWorkflowId(domainId: string): string {
  return `${SEND_DOMAIN_KIND}:${domainId}`;
}

export const sendDomainActorContract: ActorContract<SendDomainInput> = {
  workflowType: SEND_DOMAIN_WORKFLOW,
  kind: SEND_DOMAIN_KIND,
  workflowId: (input) => sendDomainWorkflowId(input.domainId),
  orgIdOf: (input) => input.orgId,
  wake: wakeDomainSignal,
};

/** The actor's one activity (activities/ implements it through the drainer). */
export interface SendDomainActivities {
  drainSendDomain(input: SendDomainInput): Promise<DrainSummary>;
}

/**
 * A drain sends due emails through the pooled relay connections until nothing is due, lingers
 * briefly for new ones (NOTIFY from the API), then returns; it heartbeats while it works, so a
 * worker killed mid-batch is noticed within the heartbeat timeout and the drain runs again
 * elsewhere (the dead one's emails fall due again when their lease lapses).
 */
const { drainSendDomain } = proxyActivities<SendDomainActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

/**
 * sendDomainActor — id `send-domain:<domainId>`, task queue herald-main, HeraldOrgId /
 * HeraldKind = send-domain / HeraldDeliveryStatus = idle | retrying | failing. The domain's
 * emails are rows (transactional_emails with `next_attempt_at`: accepted, scheduled, deferred),
 * drained by the loop of queue-actor.ts; scheduled sends are rows due at `scheduled_at`, so the
 * actor's timer, not a workflow per email, waits for them. Started and woken by
 * signal-with-start from the API and the reconciler.
 */
export async function sendDomainActor(input: SendDomainInput): Promise<DrainSummary | null> {
  return runQueueActor({
    wake: wakeDomainSignal,
    drain: () => drainSendDomain(input),
    continueAsNew: () => continueAsNew<typeof sendDomainActor>(input),
  });
}
