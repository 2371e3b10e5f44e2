/**
 * The automation builder's fields, pure: how the builder's form fields map onto a definition
 * (both ways), which fields each part has, and what the builder can show with fields (the flow
 * of cards and adding or removing a step are in dashboard-automations.flow.ts). The builder
 * edits a definition that may not be valid yet (a draft in progress), so everything here reads
 * it loosely (`unknown`) and never drops what it cannot show: a part the builder has no fields
 * for travels as JSON in a field of its own.
 *
 * A builder field is named `d.<path>[~list|~json][@<field>=<v1>|<v2>…]`: the dotted path of its
 * value in the definition; `~list` for comma-separated (or repeated) values that make an array,
 * `~json` for a JSON value; `@` for a field that counts only while another field (a trigger
 * type, a condition kind) has one of the values. An empty field leaves its key out. The
 * builder's script (assets/automation-builder.js) assembles the JSON view the same way.
 */
import type { StepType } from '../automations/automation-definition.ts';

export type Obj = Record<string, unknown>;

export const isObj = (value: unknown): value is Obj => typeof value === 'object' && value !== null && !Array.isArray(value);
export const isString = (value: unknown): value is string => typeof value === 'string';

/** How a field's text becomes its value. */
export type FieldAs = 'list' | 'json';

/** A field counts only while the field `field` has one of `values`. */
export interface FieldGuard {
  field: string;
  values: readonly string[];
}

/** The form name of a builder field. */
export function fieldName(path: string, options: { as?: FieldAs | undefined; when?: FieldGuard | undefined } = {}): string {
  const as = options.as ? `~${options.as}` : '';
  const when = options.when ? `@${options.when.field}=${options.when.values.join('|')}` : '';
  return `d.${path}${as}${when}`;
}

const NAME = /^d\.([^~@]+)(?:~(list|json))?(?:@([^=]+)=(.*))?$/;
const SEGMENT = /^(?:\d{1,3}|[A-Za-z_][\w-]{0,99})$/;
/** Never a key of the assembled object (a form field must not reach Object.prototype). */
const FORBIDDEN = new Set(['__proto__', 'prototype', 'constructor']);

/** The parts of a builder field's name; null for any other form field. */
export function parseFieldName(name: string): { path: string[]; as?: FieldAs; when?: FieldGuard } | null {
  const match = NAME.exec(name);
  if (!match) return null;
  const path = match[1]!.split('.');
  if (!path.every((segment) => SEGMENT.test(segment) && !FORBIDDEN.has(segment))) return null;
  return {
    path,
    ...(match[2] ? { as: match[2] as FieldAs } : {}),
    ...(match[3] !== undefined ? { when: { field: match[3], values: match[4]!.split('|') } } : {}),
  };
}

function valueOf(as: FieldAs | undefined, texts: readonly string[]): unknown {
  if (as === 'list') {
    const items = texts.flatMap((text) => text.split(',')).map((item) => item.trim());
    const kept = items.filter((item) => item !== '');
    return kept.length > 0 ? kept : undefined;
  }
  const text = (texts[0] ?? '').trim();
  if (text === '') return undefined;
  if (as !== 'json') return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // Kept as text: the definition's check then says where the value is not what it should be.
    return text;
  }
}

function setPath(root: Obj, path: readonly string[], value: unknown): void {
  let node: Obj | unknown[] = root;
  path.forEach((segment, i) => {
    const key = /^\d+$/.test(segment) ? Number(segment) : segment;
    const container = node as Record<string | number, unknown>;
    if (i === path.length - 1) {
      container[key] = value;
      return;
    }
    const existing = container[key];
    if (typeof existing !== 'object' || existing === null) container[key] = /^\d+$/.test(path[i + 1]!) ? [] : {};
    node = container[key] as Obj | unknown[];
  });
}

/** Arrays without the holes of indices no field filled. */
function compact(value: unknown): unknown {
  if (Array.isArray(value)) return value.filter((item) => item !== undefined).map(compact);
  if (isObj(value)) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, compact(item)]));
  return value;
}

/**
 * The definition the builder's fields describe, from a form's fields in order (repeated names
 * repeated); fields that are not the builder's are ignored.
 */
export function assembleDefinition(pairs: Iterable<readonly [string, string]>): Obj {
  const values = new Map<string, string[]>();
  for (const [name, value] of pairs) values.set(name, [...(values.get(name) ?? []), value]);
  const root: Obj = {};
  for (const [name, texts] of values) {
    const field = parseFieldName(name);
    if (!field) continue;
    if (field.when && !field.when.values.includes(values.get(field.when.field)?.[0] ?? '')) continue;
    const value = valueOf(field.as, texts);
    if (value !== undefined) setPath(root, field.path, value);
  }
  return compact(root) as Obj;
}

/** What a builder input is: its label, widget and where its choices come from. */
export interface FieldSpec {
  key: string;
  label: string;
  widget: 'text' | 'email' | 'select' | 'textarea' | 'weekdays';
  as?: FieldAs;
  /** The choices of a select: fixed values, or the workspace's resources / the definition's steps. */
  choices?: readonly string[] | 'templates' | 'segments' | 'endpoints' | 'steps' | 'send-steps';
  /** Shown only for some values of another key of the same object (a trigger's type, a wait's event). */
  when?: { key: string; values: readonly string[] };
  hint?: string;
  /** The choice that means "none" (a select's empty option). */
  none?: string;
}

const DURATION_HINT = 'A number and a unit: 30s, 15m, 2h or 3d (at most 180 days).';
const EMAIL_EVENTS = ['email.opened', 'email.clicked', 'email.replied'] as const;

/** The keys through which a step leads on, with the words the flow labels them with. */
export const BRANCH_KEYS: Partial<Record<StepType, readonly { key: string; label: string }[]>> = {
  condition: [
    { key: 'yes', label: 'yes' },
    { key: 'no', label: 'no' },
  ],
  wait_for_event: [
    { key: 'next', label: 'event' },
    { key: 'timeout_next', label: 'timeout' },
  ],
};

/** A step's outgoing keys: its branches, or `next` (none for exit). */
export function exitsOf(type: unknown): readonly { key: string; label: string }[] {
  if (type === 'exit') return [];
  return BRANCH_KEYS[type as StepType] ?? [{ key: 'next', label: 'next' }];
}

const NEXT: FieldSpec = { key: 'next', label: 'Then', widget: 'select', choices: 'steps', none: '— end of the automation' };

/** The builder's fields of each step type (besides id and type; a condition's `if` is drawn apart). */
export const STEP_FIELDS: Record<StepType, readonly FieldSpec[]> = {
  send_email: [
    { key: 'template_id', label: 'Template', widget: 'select', choices: 'templates', none: '— choose a published template' },
    { key: 'from', label: 'From address', widget: 'email', hint: 'An address on a verified domain of the workspace.' },
    { key: 'from_name', label: 'From name', widget: 'text' },
    { key: 'reply_to', label: 'Reply-To', widget: 'email' },
    NEXT,
  ],
  wait: [{ key: 'duration', label: 'Wait for', widget: 'text', hint: DURATION_HINT }, NEXT],
  wait_until: [
    { key: 'time', label: 'Until the time', widget: 'text', hint: 'HH:MM, in the contact’s time zone (or the automation’s).' },
    { key: 'weekdays', label: 'On', widget: 'weekdays', as: 'list', hint: 'None checked: any day.' },
    NEXT,
  ],
  wait_for_event: [
    { key: 'event', label: 'Event', widget: 'select', choices: [...EMAIL_EVENTS, 'event'] },
    {
      key: 'step',
      label: 'Of the email sent by',
      widget: 'select',
      choices: 'send-steps',
      none: '— choose a send step',
      when: { key: 'event', values: EMAIL_EVENTS },
    },
    { key: 'name', label: 'Custom event name', widget: 'text', when: { key: 'event', values: ['event'] } },
    { key: 'timeout', label: 'Give up after', widget: 'text', hint: DURATION_HINT },
  ],
  condition: [],
  update_contact: [
    { key: 'add_tags', label: 'Add tags', widget: 'text', as: 'list', hint: 'Separated by commas.' },
    { key: 'remove_tags', label: 'Remove tags', widget: 'text', as: 'list', hint: 'Separated by commas.' },
    { key: 'set_fields', label: 'Set custom fields (JSON)', widget: 'textarea', as: 'json', hint: 'An object, e.g. {"plan": "pro"}.' },
    NEXT,
  ],
  add_to_segment: [{ key: 'segment_id', label: 'Segment', widget: 'select', choices: 'segments', none: '— choose a segment' }, NEXT],
  remove_from_segment: [{ key: 'segment_id', label: 'Segment', widget: 'select', choices: 'segments', none: '— choose a segment' }, NEXT],
  webhook: [
    { key: 'endpoint_id', label: 'Webhook endpoint', widget: 'select', choices: 'endpoints', none: '— choose an endpoint' },
    { key: 'payload', label: 'Payload (JSON)', widget: 'textarea', as: 'json', hint: 'An object sent with the run’s contact.' },
    NEXT,
  ],
  exit: [{ key: 'reason', label: 'Exit reason', widget: 'text' }],
};

/** A wait-for-event's and a condition's branch targets, drawn with their branch. */
export const BRANCH_FIELD: FieldSpec = { key: '', label: 'Goes to', widget: 'select', choices: 'steps', none: '— end of the automation' };

const DATE = { key: 'type', values: ['date'] } as const;

/** The trigger's fields besides its type, each for the types it belongs to. */
export const TRIGGER_FIELDS: readonly FieldSpec[] = [
  {
    key: 'segment_id',
    label: 'Segment',
    widget: 'select',
    choices: 'segments',
    none: '— choose a segment',
    when: { key: 'type', values: ['segment.joined'] },
  },
  { key: 'tag', label: 'Tag', widget: 'text', when: { key: 'type', values: ['tag.added'] } },
  { key: 'name', label: 'Event name', widget: 'text', when: { key: 'type', values: ['event'] } },
  {
    key: 'template_id',
    label: 'Of the template',
    widget: 'select',
    choices: 'templates',
    none: '— any template',
    when: { key: 'type', values: ['email.opened', 'email.clicked'] },
  },
  { key: 'broadcast_id', label: 'Of the broadcast (id)', widget: 'text', when: { key: 'type', values: ['email.opened', 'email.clicked'] } },
  {
    key: 'field',
    label: 'Date field',
    widget: 'text',
    when: DATE,
    hint: 'created_at, or custom.<name>: a custom field holding YYYY-MM-DD.',
  },
  { key: 'repeat', label: 'Repeat', widget: 'select', choices: ['yearly', 'once'], when: DATE },
  {
    key: 'offset_days',
    label: 'Days after (or before, negative)',
    widget: 'text',
    as: 'json',
    when: DATE,
    hint: '-365 to 365; 0 is the day.',
  },
  { key: 'at', label: 'At', widget: 'text', when: DATE, hint: 'HH:MM in the automation’s time zone (09:00 when empty).' },
  {
    key: 'zone',
    label: 'Day and time in the zone of',
    widget: 'select',
    choices: ['contact'],
    none: '— the automation',
    when: DATE,
    hint: 'contact: each contact’s own (its custom field timezone; the automation’s when it has none).',
  },
];

/** The kinds of condition the builder has fields for; anything else is edited as JSON. */
export const CONDITION_KINDS = {
  email: { label: 'an email of this run was…', fields: ['email', 'step'] },
  has_tag: { label: 'the contact has the tag', fields: ['has_tag'] },
  in_segment: { label: 'the contact is in the segment', fields: ['in_segment'] },
  had_event: { label: 'the contact had the custom event', fields: ['had_event'] },
  field: { label: 'a contact field', fields: ['field', 'op', 'value'] },
  json: { label: 'several conditions (JSON)', fields: [] },
} as const;
export type ConditionKind = keyof typeof CONDITION_KINDS;

export const CONDITION_FIELDS: Record<string, FieldSpec> = {
  email: { key: 'email', label: 'Was', widget: 'select', choices: ['opened', 'clicked', 'replied'] },
  step: { key: 'step', label: 'The email sent by', widget: 'select', choices: 'send-steps', none: '— choose a send step' },
  has_tag: { key: 'has_tag', label: 'Tag', widget: 'text' },
  in_segment: { key: 'in_segment', label: 'Segment', widget: 'select', choices: 'segments', none: '— choose a segment' },
  had_event: { key: 'had_event', label: 'Event name', widget: 'text' },
  field: { key: 'field', label: 'Field', widget: 'text', hint: 'email, first_name, last_name, company, status or custom.<name>' },
  op: { key: 'op', label: 'Is', widget: 'select', choices: ['eq', 'neq', 'contains', 'exists', 'not_exists', 'gt', 'lt'] },
  value: { key: 'value', label: 'Value', widget: 'text' },
};
