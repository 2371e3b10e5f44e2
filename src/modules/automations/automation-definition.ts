/**
 * An automation's definition: a trigger, a re-entry rule, an optional goal and a graph of steps
 * (each step names the step that follows; a condition and a wait-for-event name two). This file
 * is the format (valibot) and its checks as a whole (graph and time rules); the checks that need
 * the database (templates, domains, segments, endpoints) are in automation-publish.ts.
 * docs/automations.md describes the format for users.
 */
import * as v from 'valibot';
import { TrackingSettingSchema } from '../tracking/tracking.schemas.ts';

/** The longest wait a step may ask for. */
export const MAX_WAIT_SECONDS = 180 * 24 * 3600;
/** Steps in one definition, at most. */
export const MAX_STEPS = 100;

export const TRIGGER_TYPES = [
  'contact.created',
  'segment.joined',
  'tag.added',
  'event',
  'email.opened',
  'email.clicked',
  'email.replied',
  'date',
] as const;
export type TriggerType = (typeof TRIGGER_TYPES)[number];

export const STEP_TYPES = [
  'send_email',
  'wait',
  'wait_until',
  'wait_for_event',
  'condition',
  'update_contact',
  'add_to_segment',
  'remove_from_segment',
  'webhook',
  'exit',
] as const;
export type StepType = (typeof STEP_TYPES)[number];

/** A duration such as `30s`, `15m`, `2h`, `3d` (seconds, minutes, hours, days). */
const DURATION = /^(\d{1,6})(s|m|h|d)$/;
const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86_400 } as const;

export function durationSeconds(text: string): number | null {
  const match = DURATION.exec(text);
  if (!match) return null;
  return Number(match[1]) * UNIT_SECONDS[match[2] as keyof typeof UNIT_SECONDS];
}

const Duration = v.pipe(
  v.string(),
  v.check((text) => durationSeconds(text) !== null, 'must be a number and a unit: 30s, 15m, 2h or 3d'),
  // A text that is not a duration has its one message above, not this one too.
  v.check((text) => (durationSeconds(text) ?? 1) >= 1, 'must be at least one second'),
  v.check((text) => (durationSeconds(text) ?? 0) <= MAX_WAIT_SECONDS, 'must be at most 180 days'),
);

const StepId = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, _ or -'));
const Next = v.nullish(StepId);
const Id = v.pipe(v.string(), v.minLength(1), v.maxLength(24));
const EventName = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_.:-]{1,100}$/, 'must be 1 to 100 letters, digits, _ . : or -'));
const Tag = v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(100));
const TimeZone = v.pipe(
  v.string(),
  v.check((zone) => isTimeZone(zone), 'must be an IANA time zone such as Europe/Paris'),
);
/** `HH:MM`, 24-hour. */
const TIME_OF_DAY = /^([01]\d|2[0-3]):[0-5]\d$/;
/** How many days before (negative) or after (positive) its date a date trigger may fire. */
export const DATE_OFFSET_DAYS = { min: -365, max: 365 } as const;
const DateField = v.pipe(
  v.string(),
  v.regex(
    /^(created_at|custom\.[A-Za-z0-9_]{1,64})$/,
    'must be created_at or custom.<name> (a custom field: 1 to 64 letters, digits or _)',
  ),
);
const OffsetDays = v.pipe(
  v.number(),
  v.integer('must be a whole number of days'),
  v.minValue(DATE_OFFSET_DAYS.min, `must be at least ${DATE_OFFSET_DAYS.min} (days before the date)`),
  v.maxValue(DATE_OFFSET_DAYS.max, `must be at most ${DATE_OFFSET_DAYS.max} (days after the date)`),
);
export const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;

export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

const Trigger = v.variant('type', [
  v.strictObject({ type: v.literal('contact.created') }),
  v.strictObject({ type: v.literal('segment.joined'), segment_id: Id }),
  v.strictObject({ type: v.literal('tag.added'), tag: Tag }),
  v.strictObject({ type: v.literal('event'), name: EventName }),
  v.strictObject({ type: v.literal('email.opened'), template_id: v.optional(Id), broadcast_id: v.optional(Id) }),
  v.strictObject({ type: v.literal('email.clicked'), template_id: v.optional(Id), broadcast_id: v.optional(Id) }),
  v.strictObject({ type: v.literal('email.replied') }),
  /**
   * On a contact's date (plus `offset_days`), at `at` in the definition's time zone, or with
   * `zone: "contact"` in each contact's own (its `timezone` field): automation-date.fns.ts.
   */
  v.strictObject({
    type: v.literal('date'),
    field: DateField,
    repeat: v.picklist(['yearly', 'once'], 'must be yearly or once'),
    offset_days: v.optional(OffsetDays, 0),
    at: v.optional(v.pipe(v.string(), v.regex(TIME_OF_DAY, 'must be HH:MM (00:00 to 23:59)')), '09:00'),
    zone: v.optional(v.picklist(['automation', 'contact'], 'must be automation or contact')),
  }),
]);

const Reentry = v.variant('mode', [
  v.strictObject({ mode: v.literal('once') }),
  v.strictObject({ mode: v.literal('always') }),
  v.strictObject({ mode: v.literal('cooldown'), cooldown: Duration }),
]);

const FieldCondition = v.strictObject({
  field: v.pipe(v.string(), v.regex(/^(email|first_name|last_name|company|status|custom\.[A-Za-z0-9_]{1,64})$/, 'must be a contact field')),
  op: v.picklist(['eq', 'neq', 'contains', 'exists', 'not_exists', 'gt', 'lt']),
  value: v.optional(v.union([v.string(), v.number(), v.boolean()])),
});
const TagCondition = v.strictObject({ has_tag: Tag });
const SegmentCondition = v.strictObject({ in_segment: Id });
const EventCondition = v.strictObject({
  /** Whether the email a send step of this run sent was opened / clicked. */
  email: v.picklist(['opened', 'clicked', 'replied']),
  step: StepId,
});
const CustomEventCondition = v.strictObject({ had_event: EventName });

export type Condition =
  | v.InferOutput<typeof FieldCondition>
  | v.InferOutput<typeof TagCondition>
  | v.InferOutput<typeof SegmentCondition>
  | v.InferOutput<typeof EventCondition>
  | v.InferOutput<typeof CustomEventCondition>
  | { all: Condition[] }
  | { any: Condition[] }
  | { not: Condition };

const ConditionSchema: v.GenericSchema<Condition> = v.union([
  FieldCondition,
  TagCondition,
  SegmentCondition,
  EventCondition,
  CustomEventCondition,
  v.strictObject({ all: v.pipe(v.array(v.lazy(() => ConditionSchema)), v.minLength(1), v.maxLength(20)) }),
  v.strictObject({ any: v.pipe(v.array(v.lazy(() => ConditionSchema)), v.minLength(1), v.maxLength(20)) }),
  v.strictObject({ not: v.lazy(() => ConditionSchema) }),
]);

const Email = v.pipe(v.string(), v.trim(), v.email('must be an email address'), v.maxLength(320));

const Step = v.variant('type', [
  v.strictObject({
    id: StepId,
    type: v.literal('send_email'),
    template_id: Id,
    from: Email,
    from_name: v.optional(v.pipe(v.string(), v.maxLength(200))),
    reply_to: v.optional(Email),
    /** Open pixel and tracked links, both on unless turned off (Herald's broadcast default). */
    tracking: v.optional(TrackingSettingSchema),
    next: Next,
  }),
  v.strictObject({ id: StepId, type: v.literal('wait'), duration: Duration, next: Next }),
  v.strictObject({
    id: StepId,
    type: v.literal('wait_until'),
    time: v.pipe(v.string(), v.regex(TIME_OF_DAY, 'must be HH:MM')),
    weekdays: v.optional(v.pipe(v.array(v.picklist(WEEKDAYS)), v.minLength(1))),
    next: Next,
  }),
  v.strictObject({
    id: StepId,
    type: v.literal('wait_for_event'),
    /** `email.opened` / `email.clicked` / `email.replied` of the email step `step` sent, or a custom `event` named `name`. */
    event: v.picklist(['email.opened', 'email.clicked', 'email.replied', 'event']),
    step: v.optional(StepId),
    name: v.optional(EventName),
    timeout: Duration,
    next: Next,
    timeout_next: Next,
  }),
  v.strictObject({ id: StepId, type: v.literal('condition'), if: ConditionSchema, yes: Next, no: Next }),
  v.strictObject({
    id: StepId,
    type: v.literal('update_contact'),
    add_tags: v.optional(v.pipe(v.array(Tag), v.maxLength(50))),
    remove_tags: v.optional(v.pipe(v.array(Tag), v.maxLength(50))),
    set_fields: v.optional(
      v.record(v.pipe(v.string(), v.regex(/^[A-Za-z0-9_]{1,64}$/)), v.union([v.string(), v.number(), v.boolean(), v.null()])),
    ),
    next: Next,
  }),
  v.strictObject({ id: StepId, type: v.literal('add_to_segment'), segment_id: Id, next: Next }),
  v.strictObject({ id: StepId, type: v.literal('remove_from_segment'), segment_id: Id, next: Next }),
  v.strictObject({
    id: StepId,
    type: v.literal('webhook'),
    endpoint_id: Id,
    payload: v.optional(v.record(v.string(), v.unknown())),
    next: Next,
  }),
  v.strictObject({ id: StepId, type: v.literal('exit'), reason: v.optional(v.pipe(v.string(), v.maxLength(100))) }),
]);

const Goal = v.union([v.strictObject({ in_segment: Id }), v.strictObject({ has_tag: Tag }), v.strictObject({ had_event: EventName })]);

export const AutomationDefinitionBody = v.strictObject({
  trigger: Trigger,
  reentry: v.optional(Reentry, { mode: 'once' }),
  /** A run whose contact meets the goal ends (exit reason `goal`), at whatever step it is. */
  goal: v.nullish(Goal),
  /** Time zone of wait-until steps for a contact without a `timezone` custom field, and of a date trigger. */
  timezone: v.optional(TimeZone, 'UTC'),
  /** The first step. */
  start: StepId,
  steps: v.pipe(v.array(Step), v.minLength(1, 'must have at least one step'), v.maxLength(MAX_STEPS)),
});

export type AutomationDefinition = v.InferOutput<typeof AutomationDefinitionBody>;
export type AutomationStep = AutomationDefinition['steps'][number];
export type AutomationTrigger = AutomationDefinition['trigger'];
export type AutomationGoal = NonNullable<AutomationDefinition['goal']>;

/** One problem with a definition: where (`steps.2.next`) and what. */
export interface DefinitionProblem {
  path: string;
  message: string;
}

/** The steps a step leads to. */
export function successors(step: AutomationStep): (string | null | undefined)[] {
  switch (step.type) {
    case 'condition':
      return [step.yes, step.no];
    case 'wait_for_event':
      return [step.next, step.timeout_next];
    case 'exit':
      return [];
    default:
      return [step.next];
  }
}

const WAITING_STEPS: ReadonlySet<StepType> = new Set(['wait', 'wait_until', 'wait_for_event']);

/** The graph rules: ids unique, every `next` a step, every step reachable, no loop without a wait, references to earlier send steps valid. */
function graphProblems(definition: AutomationDefinition): DefinitionProblem[] {
  const problems: DefinitionProblem[] = [];
  const byId = new Map<string, AutomationStep>();
  definition.steps.forEach((step, index) => {
    if (byId.has(step.id)) problems.push({ path: `steps.${index}.id`, message: `step id "${step.id}" is used twice` });
    byId.set(step.id, step);
  });
  if (!byId.has(definition.start)) problems.push({ path: 'start', message: `there is no step "${definition.start}"` });
  definition.steps.forEach((step, index) => {
    for (const [key, target] of Object.entries(step)) {
      if (!['next', 'yes', 'no', 'timeout_next'].includes(key) || typeof target !== 'string') continue;
      if (!byId.has(target)) problems.push({ path: `steps.${index}.${key}`, message: `there is no step "${target}"` });
      if (target === step.id) problems.push({ path: `steps.${index}.${key}`, message: 'a step cannot lead to itself' });
    }
    const sendStep = (ref: string | undefined, field: string) => {
      if (ref === undefined) return;
      if (byId.get(ref)?.type !== 'send_email')
        problems.push({ path: `steps.${index}.${field}`, message: `"${ref}" is not a send_email step` });
    };
    if (step.type === 'wait_for_event') {
      if (step.event === 'event' && !step.name)
        problems.push({ path: `steps.${index}.name`, message: 'a custom event wait needs the event name' });
      if (step.event !== 'event' && !step.step)
        problems.push({ path: `steps.${index}.step`, message: 'an email event wait names the send_email step whose email it waits on' });
      sendStep(step.step, 'step');
    }
  });
  if (problems.length > 0) return problems;

  // Reachable from start; a cycle must pass through a waiting step (else it would spin).
  const reachable = new Set<string>();
  const stack = [definition.start];
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (reachable.has(id)) continue;
    reachable.add(id);
    for (const next of successors(byId.get(id)!)) if (next) stack.push(next);
  }
  definition.steps.forEach((step, index) => {
    if (!reachable.has(step.id)) problems.push({ path: `steps.${index}`, message: `step "${step.id}" cannot be reached from the start` });
  });
  const cycle = cycleWithoutWait(definition, byId);
  if (cycle) problems.push({ path: 'steps', message: `the loop ${cycle.join(' → ')} has no wait: it would run without end` });
  return problems;
}

/** A cycle of non-waiting steps, if there is one (depth-first search over the graph without its waiting steps). */
function cycleWithoutWait(definition: AutomationDefinition, byId: Map<string, AutomationStep>): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (id: string): string[] | null => {
    const step = byId.get(id);
    if (!step || WAITING_STEPS.has(step.type)) return null;
    if (state.get(id) === 'done') return null;
    if (state.get(id) === 'open') return [...path.slice(path.indexOf(id)), id];
    state.set(id, 'open');
    path.push(id);
    for (const next of successors(step)) {
      if (!next) continue;
      const found = visit(next);
      if (found) return found;
    }
    path.pop();
    state.set(id, 'done');
    return null;
  };
  for (const step of definition.steps) {
    const found = visit(step.id);
    if (found) return found;
  }
  return null;
}

/**
 * Parses and checks a definition as a whole; the problems (every one found, with its path) or
 * the definition. Database references are checked by the publisher.
 */
export function parseDefinition(
  input: unknown,
): { ok: true; definition: AutomationDefinition } | { ok: false; problems: DefinitionProblem[] } {
  const parsed = v.safeParse(AutomationDefinitionBody, input);
  if (!parsed.success) {
    return {
      ok: false,
      problems: parsed.issues.map((issue) => ({ path: v.getDotPath(issue) ?? '(definition)', message: issue.message })),
    };
  }
  const problems = graphProblems(parsed.output);
  return problems.length > 0 ? { ok: false, problems } : { ok: true, definition: parsed.output };
}

/** What a trigger matches on, stored beside the automation for enrolment's lookup. */
export function triggerKey(trigger: AutomationTrigger): string | null {
  switch (trigger.type) {
    case 'segment.joined':
      return trigger.segment_id;
    case 'tag.added':
      return trigger.tag;
    case 'event':
      return trigger.name;
    case 'email.opened':
    case 'email.clicked':
      return trigger.template_id ? `template:${trigger.template_id}` : trigger.broadcast_id ? `broadcast:${trigger.broadcast_id}` : null;
    default:
      return null;
  }
}
