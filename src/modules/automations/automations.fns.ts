import type { AutomationStatus } from '../../../db/entities/index.ts';

/**
 * Which status may follow which (the spec leaves it open). `draft` is an automation that has
 * never run; once activated it moves between `active` and `paused`; any state may be archived;
 * an archived automation comes back only as a `draft`, so restoring it never resumes sending
 * without an explicit activation. Setting the current status again is not a transition.
 */
export const AUTOMATION_TRANSITIONS: Readonly<Record<AutomationStatus, readonly AutomationStatus[]>> = {
  draft: ['active', 'archived'],
  active: ['paused', 'archived'],
  paused: ['active', 'archived'],
  archived: ['draft'],
};

/** Whether an automation in `from` may be moved to `to` (staying in the same state is allowed). */
export function canTransition(from: AutomationStatus, to: AutomationStatus): boolean {
  return from === to || AUTOMATION_TRANSITIONS[from].includes(to);
}
