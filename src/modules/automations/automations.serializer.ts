import type { Automation, AutomationStats } from '../../../db/entities/index.ts';

const STAT_KEYS = [
  'totalRuns',
  'activeRuns',
  'completedRuns',
  'failedRuns',
  'emailsSent',
  'creditsUsed',
] as const satisfies readonly (keyof AutomationStats)[];

/** Exactly the spec's six counters, as integers, whatever else the stored JSON holds. */
function serializeStats(stats: Partial<AutomationStats> | null | undefined): AutomationStats {
  const out = {} as AutomationStats;
  for (const key of STAT_KEYS) {
    const value = Number(stats?.[key] ?? 0);
    out[key] = Number.isFinite(value) ? Math.trunc(value) : 0;
  }
  return out;
}

/** The spec's Automation (snake_case). */
export function serializeAutomation(automation: Automation) {
  return {
    _id: automation.id,
    name: automation.name,
    description: automation.description,
    status: automation.status,
    trigger_type: automation.triggerType,
    stats: serializeStats(automation.stats),
    version: automation.version,
    created_at: automation.createdAt.toISOString(),
    updated_at: automation.updatedAt.toISOString(),
  };
}

/** The delete envelope: DELETE archives, so `archived` is always true. */
export function serializeArchivedAutomation(automation: Automation) {
  return { _id: automation.id, deleted: true, archived: automation.status === 'archived' };
}
