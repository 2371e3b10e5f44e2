import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn, updatedAtColumn } from './columns.ts';

export const AUTOMATION_STATUSES = ['draft', 'active', 'paused', 'archived'] as const;
export type AutomationStatus = (typeof AUTOMATION_STATUSES)[number];

export interface AutomationStats {
  totalRuns: number;
  activeRuns: number;
  completedRuns: number;
  failedRuns: number;
  emailsSent: number;
  creditsUsed: number;
}

export const EMPTY_AUTOMATION_STATS: AutomationStats = {
  totalRuns: 0,
  activeRuns: 0,
  completedRuns: 0,
  failedRuns: 0,
  emailsSent: 0,
  creditsUsed: 0,
};

/** An automation; created by operators, renamed and moved between states over the API. */
export const AutomationSchema = defineEntity({
  name: 'Automation',
  tableName: 'automations',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn(),
    name: p.string().length(120),
    description: p.string().length(2000).default(''),
    status: p.enum(AUTOMATION_STATUSES).default('draft'),
    triggerType: p.string().length(100),
    stats: p.json<AutomationStats>().defaultRaw(`'${JSON.stringify(EMPTY_AUTOMATION_STATS)}'`),
    /** Increases on every change. */
    version: p.integer().default(1),
    /** The published definition new runs start on (automation_definitions); null until one is published. */
    definitionId: p.string().length(24).nullable(),
    /** What the trigger matches on (a segment id, tag, event name, template id), for enrolment's lookup. */
    triggerKey: p.string().length(200).nullable(),
    /**
     * Until when the automation's actor (`automation:<id>`) is draining: while it is in the
     * future the actor is awake and sees new runs by itself, so writers do not signal it.
     */
    drainLeaseUntil: p.datetime().nullable(),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
  indexes: [{ name: 'automations_trigger_index', properties: ['orgId', 'triggerType', 'triggerKey'], where: { status: 'active' } }],
});

export class Automation extends AutomationSchema.class {}
AutomationSchema.setClass(Automation);

/**
 * One published definition of an automation (trigger, re-entry, goal, steps), immutable: runs
 * keep the one they started on, whatever is published after.
 */
export const AutomationDefinitionSchema = defineEntity({
  name: 'AutomationDefinition',
  tableName: 'automation_definitions',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    automationId: p.string().length(24),
    /** The automation's `version` when this definition was published. */
    version: p.integer(),
    definition: p.json<Record<string, unknown>>(),
    createdAt: createdAtColumn(),
  },
  uniques: [{ properties: ['automationId', 'version'] }],
});

export class AutomationDefinition extends AutomationDefinitionSchema.class {}
AutomationDefinitionSchema.setClass(AutomationDefinition);

export const AUTOMATION_RUN_STATUSES = ['active', 'completed', 'failed', 'exited'] as const;
export type AutomationRunStatus = (typeof AUTOMATION_RUN_STATUSES)[number];

/**
 * One contact's way through one automation: a row of the automation's queue. `step_id` is the
 * step to run next and `due_at` when the actor looks at the run again (a wait is a timestamp
 * here, not a timer); `waiting_for` names the event a wait-for-event step listens for.
 */
export const AutomationRunSchema = defineEntity({
  name: 'AutomationRun',
  tableName: 'automation_runs',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    automationId: p.string().length(24),
    definitionId: p.string().length(24),
    contactId: p.string().length(24),
    status: p.enum(AUTOMATION_RUN_STATUSES).default('active'),
    stepId: p.string().length(64).nullable(),
    dueAt: p.datetime().nullable(),
    /** The event key a wait-for-event step listens for (`email.opened:<emailId>`, `event:<name>`). */
    waitingFor: p.string().length(300).nullable(),
    /** Trigger properties, the email each send step sent, events received, a wait's end. */
    context: p.json<Record<string, unknown>>().defaultRaw(`'{}'`),
    /** Until when a drain holds the run (it is being advanced). */
    leaseUntil: p.datetime().nullable(),
    exitReason: p.string().length(100).nullable(),
    error: p.string().length(1000).nullable(),
    endedAt: p.datetime().nullable(),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
  indexes: [
    { name: 'automation_runs_due_index', properties: ['automationId', 'dueAt'], where: { status: 'active' } },
    {
      name: 'automation_runs_wait_due_index',
      expression: `create index "automation_runs_wait_due_index" on "automation_runs" ("automation_id", "due_at") where "status" = 'active' and ("context" -> 'wait') is not null`,
    },
    { name: 'automation_runs_list_index', properties: ['automationId', 'createdAt', 'id'] },
    { name: 'automation_runs_contact_index', properties: ['orgId', 'contactId'] },
  ],
});

export class AutomationRun extends AutomationRunSchema.class {}
AutomationRunSchema.setClass(AutomationRun);

/** One entry of a run's timeline: a step entered and what it did. */
export const AutomationRunStepSchema = defineEntity({
  name: 'AutomationRunStep',
  tableName: 'automation_run_steps',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    runId: p.string().length(24),
    stepId: p.string().length(64),
    kind: p.string().length(40),
    /** What happened: sent, skipped, waiting, branched, updated, exited, failed, … */
    outcome: p.string().length(40),
    detail: p.json<Record<string, unknown>>().defaultRaw(`'{}'`),
    createdAt: createdAtColumn(),
  },
  indexes: [{ name: 'automation_run_steps_run_index', properties: ['runId', 'id'] }],
});

export class AutomationRunStep extends AutomationRunStepSchema.class {}
AutomationRunStepSchema.setClass(AutomationRunStep);

/** When a contact last entered an automation: the re-entry rule (once, always, cool-down) is judged on it under a row lock. */
export const AutomationEnrolmentSchema = defineEntity({
  name: 'AutomationEnrolment',
  tableName: 'automation_enrolments',
  properties: {
    automationId: p.string().length(24).primary(),
    contactId: p.string().length(24).primary(),
    orgId: orgIdColumn({ indexed: false }),
    lastEnrolledAt: p.datetime(),
  },
});

export class AutomationEnrolment extends AutomationEnrolmentSchema.class {}
AutomationEnrolmentSchema.setClass(AutomationEnrolment);

/**
 * One occurrence of a date trigger for a contact (the local day it fired), claimed before the
 * contact is enrolled in the same transaction: the key makes restarts, two workers or
 * overlapping passes enrol a contact once per occurrence. Rows a few days old are pruned.
 */
export const AutomationDateOccurrenceSchema = defineEntity({
  name: 'AutomationDateOccurrence',
  tableName: 'automation_date_occurrences',
  properties: {
    automationId: p.string().length(24).primary(),
    contactId: p.string().length(24).primary(),
    /** The local day the occurrence fired on (in the automation's time zone, or the contact's for a trigger with zone contact). */
    occursOn: p.date().primary(),
    orgId: orgIdColumn({ indexed: false }),
    enrolledAt: p.datetime(),
  },
});

export class AutomationDateOccurrence extends AutomationDateOccurrenceSchema.class {}
AutomationDateOccurrenceSchema.setClass(AutomationDateOccurrence);

/**
 * An automation's six counters, spread over a few rows: each change adds its deltas to one
 * shard in the transaction that makes the change, so the sum is exact across crashes and
 * concurrent writers never queue on one row.
 */
export const AutomationStatShardSchema = defineEntity({
  name: 'AutomationStatShard',
  tableName: 'automation_stat_shards',
  properties: {
    automationId: p.string().length(24).primary(),
    shard: p.smallint().primary(),
    orgId: orgIdColumn({ indexed: false }),
    totalRuns: p.integer().default(0),
    activeRuns: p.integer().default(0),
    completedRuns: p.integer().default(0),
    failedRuns: p.integer().default(0),
    emailsSent: p.integer().default(0),
    creditsUsed: p.integer().default(0),
  },
});

export class AutomationStatShard extends AutomationStatShardSchema.class {}
AutomationStatShardSchema.setClass(AutomationStatShard);
