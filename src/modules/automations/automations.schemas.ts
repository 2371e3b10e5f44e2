import * as v from 'valibot';
import { AUTOMATION_RUN_STATUSES, AUTOMATION_STATUSES } from '../../../db/entities/index.ts';
import { IdSchema, JsonObject, PageQuery, Timestamp } from '../../http/schemas.ts';

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

/** GET /automations/{id}/runs: a page, optionally only runs in one status or of one contact. */
export const ListRunsQuery = v.object({
  ...PageQuery.entries,
  status: v.optional(v.picklist(AUTOMATION_RUN_STATUSES, `must be one of ${AUTOMATION_RUN_STATUSES.join(', ')}`)),
  contact_id: v.optional(IdSchema),
});
export type ListRunsFilters = Omit<v.InferOutput<typeof ListRunsQuery>, 'limit' | 'cursor'>;

export const RunParams = v.object({ id: IdSchema, runId: IdSchema });

/** One contact's way through an automation (snake_case, as the Automation). */
export const AutomationRunResponse = v.object({
  _id: v.string(),
  automation_id: v.string(),
  contact_id: v.string(),
  status: v.picklist(AUTOMATION_RUN_STATUSES),
  step_id: v.pipe(v.nullable(v.string()), v.description('The step the run is at (or ended at); null before its first step.')),
  due_at: v.pipe(v.nullable(Timestamp), v.description('When the run is looked at again (the end of a wait); null once it ended.')),
  waiting_for: v.pipe(
    v.nullable(v.string()),
    v.description('The event a wait_for_event step listens for (`email.opened:<email id>`, `event:<name>`), else null.'),
  ),
  definition_version: v.pipe(v.number(), v.integer(), v.description('The version of the definition the run follows, kept to its end.')),
  exit_reason: v.pipe(v.nullable(v.string()), v.description("Why an exited run ended: `goal`, `archived`, an exit step's reason, …")),
  error: v.pipe(v.nullable(v.string()), v.description('Why a failed run failed.')),
  created_at: Timestamp,
  updated_at: Timestamp,
  ended_at: v.nullable(Timestamp),
});

/** One entry of a run's timeline: a step entered and what it did. */
export const RunStepResponse = v.object({
  step_id: v.string(),
  kind: v.pipe(v.string(), v.description('The step type (send_email, wait, …), or `lifecycle` for a change of the automation (archived).')),
  outcome: v.pipe(v.string(), v.description('What happened: sent, skipped, waiting, branched, updated, exited, failed, …')),
  detail: JsonObject,
  at: Timestamp,
});

export const AutomationRunWithTimelineResponse = v.object({
  ...AutomationRunResponse.entries,
  timeline: v.array(RunStepResponse),
});

/** GET /automations/{id}/definition: the published definition (docs/automations.md describes the format). */
export const PublishedDefinitionResponse = v.object({
  version: v.pipe(v.number(), v.integer()),
  definition: JsonObject,
});
