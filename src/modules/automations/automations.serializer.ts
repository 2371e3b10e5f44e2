import type { Automation, AutomationRun, AutomationRunStep, AutomationStats } from '../../../db/entities/index.ts';

/** The spec's Automation (snake_case); `stats` are the sums of its counter shards (automation-stats.repo.ts). */
export function serializeAutomation(automation: Automation, stats: AutomationStats) {
  return {
    _id: automation.id,
    name: automation.name,
    description: automation.description,
    status: automation.status,
    trigger_type: automation.triggerType,
    stats: {
      totalRuns: stats.totalRuns,
      activeRuns: stats.activeRuns,
      completedRuns: stats.completedRuns,
      failedRuns: stats.failedRuns,
      emailsSent: stats.emailsSent,
      creditsUsed: stats.creditsUsed,
    },
    version: automation.version,
    created_at: automation.createdAt.toISOString(),
    updated_at: automation.updatedAt.toISOString(),
  };
}

/** The delete envelope: DELETE archives, so `archived` is always true. */
export function serializeArchivedAutomation(automation: Automation) {
  return { _id: automation.id, deleted: true, archived: automation.status === 'archived' };
}

/**
 * A run as GET /automations/{id}/runs answers it and the `automation.run.*` events carry it;
 * `definitionVersion` is the version of the definition it follows (automation_definitions).
 */
export function serializeRun(run: AutomationRun, definitionVersion: number) {
  return {
    _id: run.id,
    automation_id: run.automationId,
    contact_id: run.contactId,
    status: run.status,
    step_id: run.stepId ?? null,
    due_at: run.dueAt?.toISOString() ?? null,
    waiting_for: run.waitingFor ?? null,
    definition_version: definitionVersion,
    exit_reason: run.exitReason ?? null,
    error: run.error ?? null,
    created_at: run.createdAt.toISOString(),
    updated_at: run.updatedAt.toISOString(),
    ended_at: run.endedAt?.toISOString() ?? null,
  };
}

/** One entry of a run's timeline. */
export function serializeRunStep(step: AutomationRunStep) {
  return { step_id: step.stepId, kind: step.kind, outcome: step.outcome, detail: step.detail, at: step.createdAt.toISOString() };
}
