import type { Client } from '@temporalio/client';
import { automationActorContract } from '../../../workflows/automation.ts';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import { createActorWaker } from '../../temporal/actor-wake.ts';
import type { TouchedAutomation } from './automation-runs.repo.ts';

/** A wake-up is bounded so a slow Temporal never holds the caller; the reconciler repeats a lost one. */
const AUTOMATION_WAKE_DEADLINE_MS = 2_000;

/**
 * Wakes, after the writer's commit, the actors of automations that got runs or events and whose
 * drain is not running (coalesced, bounded, never awaited on the request path).
 */
export function createAutomationWaker(deps: { client: Client; config: Pick<Config, 'temporal' | 'queues'>; logger: Logger }) {
  const wake = createActorWaker({ ...deps, actor: automationActorContract, deadlineMs: AUTOMATION_WAKE_DEADLINE_MS });
  return (touched: readonly TouchedAutomation[]): void => {
    for (const automation of touched) {
      if (!automation.draining) void wake({ orgId: automation.orgId, automationId: automation.automationId });
    }
  };
}

export type AutomationWaker = ReturnType<typeof createAutomationWaker>;
