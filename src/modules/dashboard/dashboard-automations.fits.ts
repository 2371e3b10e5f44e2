/**
 * What the automation builder can show with its fields, pure: a step as a card of its type, the
 * trigger, re-entry rule and goal with their fields, a condition as one of its kinds, the
 * definition at all. A part that does not fit is shown (and kept) as JSON.
 */
import { STEP_TYPES, TRIGGER_TYPES, type StepType, type TriggerType } from '../automations/automation-definition.ts';
import {
  CONDITION_KINDS,
  exitsOf,
  isObj,
  isString,
  STEP_FIELDS,
  TRIGGER_FIELDS,
  type ConditionKind,
  type Obj,
} from './dashboard-automations.builder.ts';

/** The goal's kinds (`none`: no goal). */
export const GOAL_KINDS = ['none', 'in_segment', 'has_tag', 'had_event'] as const;

/** Whether every key of `value` is one of `keys` and every value a string (or, for list keys, strings). */
function flatStrings(value: Obj, keys: readonly string[], lists: readonly string[] = []): boolean {
  return Object.entries(value).every(([key, item]) =>
    lists.includes(key) ? Array.isArray(item) && item.every(isString) : keys.includes(key) && isString(item),
  );
}

/** The kind of condition the builder shows `condition` as (`json` when its fields cannot). */
export function conditionKind(condition: unknown): ConditionKind {
  if (!isObj(condition)) return 'json';
  for (const [kind, { fields }] of Object.entries(CONDITION_KINDS)) {
    if (kind === 'json') continue;
    // What a kind needs to be recognised; the rest may be missing in a draft.
    const required = kind === 'field' ? ['field', 'op'] : fields.slice(0, 1);
    if (required.every((key) => key in condition) && flatStrings(condition, fields)) return kind as ConditionKind;
  }
  return 'json';
}

/** Whether the builder can show `step` as a card of its type (else it is shown as JSON, whole). */
export function stepFits(step: unknown): step is Obj & { id: string; type: StepType } {
  if (!isObj(step) || !isString(step.id) || !(STEP_TYPES as readonly string[]).includes(step.type as string)) return false;
  const type = step.type as StepType;
  const specs = STEP_FIELDS[type];
  const exits = exitsOf(type).map((exit) => exit.key);
  return Object.entries(step).every(([key, value]) => {
    if (key === 'id' || key === 'type') return true;
    if (type === 'condition' && key === 'if') return true;
    if (exits.includes(key)) return isString(value) || value === null;
    const spec = specs.find((s) => s.key === key);
    if (!spec) return false;
    // A field of another choice (a wait's step while it waits for a custom event) would be lost.
    if (spec.when && !spec.when.values.includes(step[spec.when.key] as string)) return false;
    if (spec.as === 'json') return true;
    if (spec.as === 'list') return Array.isArray(value) && value.every(isString);
    return isString(value);
  });
}

/** Whether the builder can show `trigger` with its fields. */
export function triggerFits(trigger: unknown): trigger is Obj & { type: TriggerType } {
  if (!isObj(trigger) || !(TRIGGER_TYPES as readonly string[]).includes(trigger.type as string)) return false;
  const allowed = ['type', ...TRIGGER_FIELDS.filter((f) => f.when!.values.includes(trigger.type as string)).map((f) => f.key)];
  return flatStrings(trigger, allowed);
}

/** Whether the builder can show the re-entry rule with its fields. */
export function reentryFits(reentry: unknown): boolean {
  if (reentry === undefined) return true;
  if (!isObj(reentry)) return false;
  if (reentry.mode === 'cooldown') return flatStrings(reentry, ['mode', 'cooldown']);
  return (reentry.mode === 'once' || reentry.mode === 'always') && Object.keys(reentry).length === 1;
}

/** The goal's kind, or null when the builder cannot show it (shown as JSON). */
export function goalKind(goal: unknown): (typeof GOAL_KINDS)[number] | null {
  if (goal === undefined || goal === null) return 'none';
  if (!isObj(goal) || Object.keys(goal).length !== 1) return null;
  const [key, value] = Object.entries(goal)[0]!;
  return (GOAL_KINDS as readonly string[]).includes(key) && key !== 'none' && isString(value) ? (key as (typeof GOAL_KINDS)[number]) : null;
}

const TOP_KEYS = ['trigger', 'reentry', 'goal', 'timezone', 'start', 'steps'];

/**
 * Whether the builder can show the definition at all: an object with a list of steps and no
 * keys beyond the format's (else it is edited as JSON only).
 */
export function builderFits(definition: unknown): definition is Obj & { steps: unknown[] } {
  return isObj(definition) && Array.isArray(definition.steps) && Object.keys(definition).every((key) => TOP_KEYS.includes(key));
}
