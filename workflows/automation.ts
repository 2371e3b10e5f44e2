import { continueAsNew, defineSignal, proxyActivities } from '@temporalio/workflow';
import type { ActorContract } from './actor-contract.ts';
import { runQueueActor, type DrainSummary } from './queue-actor.ts';

/** The contract of an automation's actor, written once (src/ imports these plain values). */
export const AUTOMATION_WORKFLOW = 'automationActor';
export const AUTOMATION_KIND = 'automation';

/** "There may be due runs": sets a flag; many wakes before the next drain are one. */
export const wakeAutomationSignal = defineSignal('wake');

export interface AutomationInput {
  orgId: string;
  automationId: string;
}

export function automationWorkflowId(automationId: string): string {
  return `${AUTOMATION_KIND}:${automationId}`;
}

export const automationActorContract: ActorContract<AutomationInput> = {
  workflowType: AUTOMATION_WORKFLOW,
  kind: AUTOMATION_KIND,
  workflowId: (input) => automationWorkflowId(input.automationId),
  orgIdOf: (input) => input.orgId,
  wake: wakeAutomationSignal,
};

/** The actor's one activity (activities/ implements it through the drainer). */
export interface AutomationActivities {
  drainAutomation(input: AutomationInput): Promise<DrainSummary>;
}

const { drainAutomation } = proxyActivities<AutomationActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

/**
 * automationActor — id `automation:<automationId>`, task queue herald-main, HeraldOrgId /
 * HeraldKind = automation. The automation's runs are rows (automation_runs with `due_at`): a
 * drain claims the due ones in batches and advances each through its steps until it waits, ends
 * or fails; a wait of three days is the run's `due_at`, so the actor's one timer (the earliest
 * due run) stands for every waiting run, never a workflow or timer per run. Started and woken by
 * signal-with-start from enrolment, events runs wait for, resuming a paused automation and the
 * reconciler.
 */
export async function automationActor(input: AutomationInput): Promise<DrainSummary | null> {
  return runQueueActor({
    wake: wakeAutomationSignal,
    drain: () => drainAutomation(input),
    continueAsNew: () => continueAsNew<typeof automationActor>(input),
  });
}
