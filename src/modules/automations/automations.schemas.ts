import * as v from 'valibot';
import { AUTOMATION_STATUSES } from '../../../db/entities/index.ts';
import { Timestamp } from '../../http/schemas.ts';

/** PATCH /automations/{id}: every field optional; the trigger and steps are not editable. */
export const UpdateAutomationBody = v.strictObject({
  name: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(120))),
  description: v.optional(v.pipe(v.string(), v.maxLength(2000))),
  status: v.optional(v.picklist(AUTOMATION_STATUSES, `must be one of ${AUTOMATION_STATUSES.join(', ')}`)),
});

export type UpdateAutomationInput = v.InferOutput<typeof UpdateAutomationBody>;

const Count = v.pipe(v.number(), v.integer());

/** The spec's Automation (snake_case outside, camelCase inside `stats`). */
export const AutomationResponse = v.object({
  _id: v.string(),
  name: v.string(),
  description: v.string(),
  status: v.picklist(AUTOMATION_STATUSES),
  trigger_type: v.string(),
  stats: v.object({
    totalRuns: Count,
    activeRuns: Count,
    completedRuns: Count,
    failedRuns: Count,
    emailsSent: Count,
    creditsUsed: Count,
  }),
  version: v.pipe(v.number(), v.integer()),
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** The delete envelope of DELETE /automations/{id}: the automation was archived, not removed. */
export const ArchiveAutomationResult = v.object({
  _id: v.string(),
  deleted: v.boolean(),
  archived: v.boolean(),
});
