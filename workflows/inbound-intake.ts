import { continueAsNew, defineSignal, proxyActivities } from '@temporalio/workflow';
import { PLATFORM_ORG_ID, type ActorContract } from './actor-contract.ts';
import { runQueueActor, type DrainSummary } from './queue-actor.ts';

/**
 * The contract of the inbound actor, written once: src/ imports these (the signal and id are
 * plain values that need no workflow context).
 */
export const INBOUND_INTAKE_WORKFLOW = 'inboundIntakeActor';
export const INBOUND_INTAKE_KIND = 'inbound-intake';
/** The name of the actor's drain lease (actor_leases) and of its NOTIFY payload: one per database. */
export const INBOUND_INTAKE_LEASE = 'inbound-intake';

/** "There may be due inbound messages": sets a flag; many wakes before the next drain are one. */
export const wakeInboundIntakeSignal = defineSignal('wake');

/** No ids: the actor owns the whole inbound queue. */
export type InboundIntakeInput = Record<string, never>;

/**
 * One actor per installation serves every workspace: its id carries the installation's prefix
 * (TEMPORAL_TASK_QUEUE_PREFIX, as Herald's schedule ids do), so installations sharing a
 * namespace keep their own actor.
 */
export function inboundIntakeWorkflowId(installationPrefix: string): string {
  return `${INBOUND_INTAKE_KIND}:${installationPrefix}`;
}

export const inboundIntakeActorContract: ActorContract<InboundIntakeInput> = {
  workflowType: INBOUND_INTAKE_WORKFLOW,
  kind: INBOUND_INTAKE_KIND,
  workflowId: (_input, installation) => inboundIntakeWorkflowId(installation),
  orgIdOf: () => PLATFORM_ORG_ID,
  wake: wakeInboundIntakeSignal,
};

/** The actor's one activity (activities/ implements it through the drainer). */
export interface InboundIntakeActivities {
  drainInbound(input: InboundIntakeInput): Promise<DrainSummary>;
}

/**
 * A drain ingests due raw messages with bounded concurrency until nothing is due, lingers
 * briefly for new ones (NOTIFY from the smtp process), then returns; it heartbeats while it
 * works, so a worker killed mid-batch is noticed within the heartbeat timeout and the drain runs
 * again elsewhere (the dead one's messages fall due again when their lease lapses).
 */
const { drainInbound } = proxyActivities<InboundIntakeActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

/**
 * inboundIntakeActor — id `inbound-intake:<prefix>`, HeraldOrgId = `platform` (it serves every
 * workspace) / HeraldKind = inbound-intake / HeraldDeliveryStatus = idle | retrying | failing.
 * Raw inbound messages are rows (inbound_messages `received`, due at `next_attempt_at`), drained
 * by the loop of queue-actor.ts: each is recorded (parse, routing, threading, email.received),
 * its attachments stored, and it is marked ingested, or retried with backoff and marked failed
 * after its last attempt (src/modules/inbound/intake-drain.ts). Started and woken by
 * signal-with-start from the smtp process and the worker's inbound reconciler.
 */
export async function inboundIntakeActor(input: InboundIntakeInput): Promise<DrainSummary | null> {
  return runQueueActor({
    wake: wakeInboundIntakeSignal,
    drain: () => drainInbound(input),
    continueAsNew: () => continueAsNew<typeof inboundIntakeActor>(input),
  });
}
