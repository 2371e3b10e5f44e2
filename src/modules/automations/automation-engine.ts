/**
 * Advancing one run: from its current step, run steps until the run waits, ends or fails. The
 * engine decides; it writes nothing. What it decided (the run's new state, its timeline entries,
 * the email to write, contact and segment changes, events) is returned as an `Advance` that the
 * drain writes for a whole batch in one transaction (automation-queue.repo.ts), so a step is
 * never half done: a crash before the commit leaves the run where it was, and nothing it decided
 * happened.
 *
 * How a run ends: `completed` when its flow ends (no next step, an exit step, or the goal met;
 * `exit_reason` says which of the last two), `failed` when a step cannot be done (`error`),
 * `exited` when it was ended from outside (the automation archived, the contact deleted).
 *
 * A wait is a time in the run's context (`wait`): entering a wait step sets it and the run's
 * `due_at`; the run is looked at again then (or earlier when an event it listens for arrives, or
 * a spurious wake-up, which finds the wait not over and sleeps again).
 */
import type { AutomationDefinition, AutomationStep, Condition } from './automation-definition.ts';
import { durationSeconds, isTimeZone, WEEKDAYS } from './automation-definition.ts';
import { BULK_TRACKING, decideTracking, type TrackingChoice } from '../tracking/tracking.fns.ts';

/** Steps one advance runs at most before it yields (the run stays due and continues in the next claim). */
export const MAX_STEPS_PER_ADVANCE = 50;

export interface RunContact {
  id: string;
  email: string;
  firstName: string;
  lastName: string;
  company: string;
  status: string;
  tags: string[];
  customFields: Record<string, unknown>;
  suppressed: boolean;
}

export interface RunContext {
  trigger?: { type: string; properties?: Record<string, unknown> };
  /** The email each send step sent: step id → email id. */
  emails?: Record<string, string>;
  /** The wait in progress: its step and when it ends (ISO). */
  wait?: { step: string; until: string };
  /** The event that ended a wait-for-event (signalRuns). */
  heard?: { key: string; at: string; detail?: Record<string, unknown> };
  /** Every event key this run heard. */
  heardKeys?: string[];
  [key: string]: unknown;
}

export interface ClaimedRun {
  id: string;
  automationId: string;
  definitionId: string;
  definitionVersion: number;
  stepId: string | null;
  context: RunContext;
  contact: RunContact | null;
  createdAt: Date;
}

/** What the engine may ask of the database while it decides (read inside the batch's transaction). */
export interface RunFacts {
  inSegment(contact: RunContact, segmentId: string): Promise<boolean>;
  /** Whether the email had an `opened` / `clicked` event. */
  emailHad(emailId: string, kind: 'opened' | 'clicked'): Promise<boolean>;
  hadEvent(contactId: string, name: string): Promise<boolean>;
  /** Takes one credit for a send; false when the workspace has none left (and no overage). */
  takeCredit(): Promise<boolean>;
  /**
   * Takes one of today's sends under the warm-up cap of the domain `from` sends on: null when
   * taken (or the domain has no cap), else when the next UTC day begins (the cap is used up).
   */
  takeSendRoom(from: string): Promise<Date | null>;
}

export interface TimelineEntry {
  stepId: string;
  kind: string;
  outcome: string;
  detail: Record<string, unknown>;
}

export interface EmailToSend {
  stepId: string;
  emailId: string;
  templateId: string;
  from: string;
  fromName: string | null;
  replyTo: string | null;
  to: string;
  contactId: string;
  variables: Record<string, unknown>;
  tracking: TrackingChoice;
}

export interface Advance {
  runId: string;
  status: 'active' | 'completed' | 'failed' | 'exited';
  stepId: string | null;
  dueAt: Date | null;
  waitingFor: string | null;
  context: RunContext;
  exitReason: string | null;
  error: string | null;
  timeline: TimelineEntry[];
  emails: EmailToSend[];
  /** The contact's tags and custom fields after the run's changes, when it changed them. */
  contactUpdate: { tags: string[]; customFields: Record<string, unknown> } | null;
  segmentAdds: string[];
  segmentRemoves: string[];
  webhooks: { stepId: string; endpointId: string; payload: Record<string, unknown> }[];
}

/** The contact's fields as templates and conditions see them. */
export function contactVariables(contact: RunContact, context: RunContext): Record<string, unknown> {
  const custom = contact.customFields;
  return {
    ...custom,
    custom,
    email: contact.email,
    first_name: contact.firstName,
    last_name: contact.lastName,
    company: contact.company,
    trigger: context.trigger?.properties ?? {},
  };
}

function fieldValue(contact: RunContact, field: string): unknown {
  if (field.startsWith('custom.')) return contact.customFields[field.slice('custom.'.length)];
  const map: Record<string, unknown> = {
    email: contact.email,
    first_name: contact.firstName,
    last_name: contact.lastName,
    company: contact.company,
    status: contact.status,
  };
  return map[field];
}

/** A field's value as comparison text (objects and arrays as JSON). */
function text(value: unknown): string {
  if (value === undefined || value === null) return '';
  return (typeof value === 'string' ? value : JSON.stringify(value)).toLowerCase();
}

function compare(value: unknown, op: string, expected: unknown): boolean {
  const present = value !== undefined && value !== null && value !== '';
  switch (op) {
    case 'exists':
      return present;
    case 'not_exists':
      return !present;
    case 'eq':
      return text(value) === text(expected);
    case 'neq':
      return text(value) !== text(expected);
    case 'contains':
      return text(value).includes(text(expected));
    case 'gt':
    case 'lt': {
      const a = Number(value);
      const b = Number(expected);
      const comparable = Number.isFinite(a) && Number.isFinite(b);
      const [x, y] = comparable ? [a, b] : [Date.parse(text(value).toUpperCase()), Date.parse(text(expected).toUpperCase())];
      if (!Number.isFinite(x) || !Number.isFinite(y)) return false;
      return op === 'gt' ? x > y : x < y;
    }
    default:
      return false;
  }
}

export async function evaluate(condition: Condition, contact: RunContact, context: RunContext, facts: RunFacts): Promise<boolean> {
  if ('all' in condition) {
    for (const part of condition.all) if (!(await evaluate(part, contact, context, facts))) return false;
    return true;
  }
  if ('any' in condition) {
    for (const part of condition.any) if (await evaluate(part, contact, context, facts)) return true;
    return false;
  }
  if ('not' in condition) return !(await evaluate(condition.not, contact, context, facts));
  if ('field' in condition) return compare(fieldValue(contact, condition.field), condition.op, condition.value);
  if ('has_tag' in condition) return contact.tags.includes(condition.has_tag);
  if ('in_segment' in condition) return facts.inSegment(contact, condition.in_segment);
  if ('had_event' in condition) return facts.hadEvent(contact.id, condition.had_event);
  const emailId = context.emails?.[condition.step];
  if (!emailId) return false;
  if (condition.email === 'replied') return (context.heardKeys ?? []).includes(`email.replied:${emailId}`);
  return facts.emailHad(emailId, condition.email);
}

/** The parts of `at` in `timeZone`: weekday (0 = Sunday), hour, minute. */
function localParts(at: Date, timeZone: string): { weekday: number; minutes: number } {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    weekday: 'short',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(at);
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? '0';
  const weekday = WEEKDAYS.indexOf(get('weekday').toLowerCase().slice(0, 3) as (typeof WEEKDAYS)[number]);
  return { weekday, minutes: Number(get('hour')) * 60 + Number(get('minute')) };
}

/**
 * The next instant after `now` whose local time in `timeZone` is `time` (HH:MM) on one of
 * `weekdays` (any day when absent). Walks forward a minute-exact step per day, so daylight
 * saving changes land on the right wall-clock time (a time skipped by a change moves to the
 * next valid minute).
 */
export function nextLocalTime(now: Date, time: string, weekdays: readonly string[] | undefined, timeZone: string): Date {
  const [hour, minute] = time.split(':').map(Number) as [number, number];
  const target = hour * 60 + minute;
  let candidate = new Date(Math.floor(now.getTime() / 60_000) * 60_000 + 60_000);
  for (let guard = 0; guard < 8 * 24 * 4; guard++) {
    const local = localParts(candidate, timeZone);
    const dayOk = !weekdays || weekdays.includes(WEEKDAYS[local.weekday]!);
    if (dayOk && local.minutes === target) return candidate;
    // Jump straight to the target minute of this local day (or the next), then check again.
    let delta = target - local.minutes;
    if (delta <= 0 || !dayOk) delta += 24 * 60;
    // Steps of at most 15 minutes near the target absorb offset changes without skipping it.
    candidate = new Date(candidate.getTime() + (delta > 15 ? delta - 15 : delta) * 60_000);
  }
  return candidate;
}

function contactTimeZone(contact: RunContact, definition: AutomationDefinition): string {
  const zone = contact.customFields.timezone;
  // An unknown zone falls back to the automation's.
  return typeof zone === 'string' && isTimeZone(zone) ? zone : definition.timezone;
}

async function goalMet(definition: AutomationDefinition, contact: RunContact, facts: RunFacts): Promise<boolean> {
  const goal = definition.goal;
  if (!goal) return false;
  if ('has_tag' in goal) return contact.tags.includes(goal.has_tag);
  if ('in_segment' in goal) return facts.inSegment(contact, goal.in_segment);
  return facts.hadEvent(contact.id, goal.had_event);
}

/** Each published definition's steps by id, built once (a definition never changes once published). */
const stepIndexes = new WeakMap<AutomationDefinition, ReadonlyMap<string, AutomationStep>>();

function stepsOf(definition: AutomationDefinition): ReadonlyMap<string, AutomationStep> {
  let steps = stepIndexes.get(definition);
  if (!steps) {
    steps = new Map(definition.steps.map((step) => [step.id, step]));
    stepIndexes.set(definition, steps);
  }
  return steps;
}

/**
 * Runs `run` from its current step at `now` until it waits, ends or fails. `newEmailId` makes
 * the id of an email a send step writes; the write is keyed by (run, step), so a redone advance
 * never sends twice.
 */
export async function advanceRun(
  run: ClaimedRun,
  definition: AutomationDefinition,
  now: Date,
  facts: RunFacts,
  newEmailId: () => string,
): Promise<Advance> {
  const out: Advance = {
    runId: run.id,
    status: 'active',
    stepId: run.stepId,
    dueAt: null,
    waitingFor: null,
    context: structuredClone(run.context),
    exitReason: null,
    error: null,
    timeline: [],
    emails: [],
    contactUpdate: null,
    segmentAdds: [],
    segmentRemoves: [],
    webhooks: [],
  };
  const steps = stepsOf(definition);
  const record = (step: AutomationStep | null, outcome: string, detail: Record<string, unknown> = {}) =>
    out.timeline.push({ stepId: step?.id ?? out.stepId ?? '-', kind: step?.type ?? 'run', outcome, detail });
  const end = (status: Advance['status'], fields: { exitReason?: string; error?: string } = {}) => {
    out.status = status;
    out.dueAt = null;
    out.waitingFor = null;
    out.exitReason = fields.exitReason ?? null;
    out.error = fields.error ?? null;
    delete out.context.wait;
    return out;
  };
  const contact = run.contact ? { ...run.contact, tags: [...run.contact.tags], customFields: { ...run.contact.customFields } } : null;
  if (!contact) {
    record(null, 'exited', { reason: 'contact deleted' });
    return end('exited', { exitReason: 'contact deleted' });
  }
  const goTo = (next: string | null | undefined): boolean => {
    delete out.context.wait;
    out.stepId = next ?? null;
    return next !== null && next !== undefined;
  };
  const sleepUntil = (until: Date, waitingFor: string | null = null) => {
    out.dueAt = until;
    out.waitingFor = waitingFor;
    return out;
  };

  for (let count = 0; count < MAX_STEPS_PER_ADVANCE; count++) {
    if (out.stepId === null) {
      record(null, 'completed');
      return end('completed');
    }
    if (await goalMet(definition, contact, facts)) {
      record(null, 'completed', { reason: 'goal' });
      return end('completed', { exitReason: 'goal' });
    }
    const step = steps.get(out.stepId);
    if (!step) {
      record(null, 'failed', { error: `step ${out.stepId} is not in the definition` });
      return end('failed', { error: `step ${out.stepId} is not in the definition` });
    }
    const wait = out.context.wait?.step === step.id ? out.context.wait : null;
    switch (step.type) {
      case 'send_email': {
        if (contact.status !== 'active' || contact.suppressed) {
          record(step, 'skipped', { reason: contact.suppressed ? 'address suppressed' : `contact ${contact.status}` });
          goTo(step.next);
          break;
        }
        // A domain whose warm-up cap is used up for the day holds the send (not the run's other steps) until the next day.
        const capped = await facts.takeSendRoom(step.from);
        if (capped) {
          record(step, 'deferred', { reason: 'the sending domain reached its daily warm-up cap', until: capped.toISOString() });
          return sleepUntil(capped);
        }
        if (!(await facts.takeCredit())) {
          record(step, 'failed', { error: 'not enough credits' });
          return end('failed', { error: 'INSUFFICIENT_CREDITS: the workspace has no credits left for this email' });
        }
        const emailId = newEmailId();
        out.emails.push({
          stepId: step.id,
          emailId,
          templateId: step.template_id,
          from: step.from,
          fromName: step.from_name ?? null,
          replyTo: step.reply_to ?? null,
          to: contact.email,
          contactId: contact.id,
          variables: contactVariables(contact, out.context),
          tracking: decideTracking(step.tracking, BULK_TRACKING),
        });
        out.context.emails = { ...out.context.emails, [step.id]: emailId };
        record(step, 'sent', { email_id: emailId, template_id: step.template_id });
        goTo(step.next);
        break;
      }
      case 'wait':
      case 'wait_until': {
        if (wait) {
          if (Date.parse(wait.until) > now.getTime()) return sleepUntil(new Date(wait.until));
          record(step, 'waited', { until: wait.until });
          goTo(step.next);
          break;
        }
        const until =
          step.type === 'wait'
            ? new Date(now.getTime() + durationSeconds(step.duration)! * 1000)
            : nextLocalTime(now, step.time, step.weekdays, contactTimeZone(contact, definition));
        out.context.wait = { step: step.id, until: until.toISOString() };
        record(step, 'waiting', { until: until.toISOString() });
        return sleepUntil(until);
      }
      case 'wait_for_event': {
        const emailId = step.step ? out.context.emails?.[step.step] : undefined;
        const key = step.event === 'event' ? `event:${step.name}` : emailId ? `${step.event}:${emailId}` : null;
        const heard = out.context.heard;
        if (wait && key && heard?.key === key) {
          delete out.context.heard;
          record(step, 'event', { key, at: heard.at });
          goTo(step.next);
          break;
        }
        if (wait) {
          if (Date.parse(wait.until) > now.getTime()) return sleepUntil(new Date(wait.until), key);
          record(step, 'timed out', { key });
          goTo(step.timeout_next);
          break;
        }
        if (!key) {
          record(step, 'timed out', { reason: `step ${step.step} sent no email to wait on` });
          goTo(step.timeout_next);
          break;
        }
        // The event may have come before the run got here (an email opened at once).
        const already =
          emailId && (step.event === 'email.opened' || step.event === 'email.clicked')
            ? await facts.emailHad(emailId, step.event === 'email.opened' ? 'opened' : 'clicked')
            : (out.context.heardKeys ?? []).includes(key);
        if (already) {
          record(step, 'event', { key, earlier: true });
          goTo(step.next);
          break;
        }
        const until = new Date(now.getTime() + durationSeconds(step.timeout)! * 1000);
        out.context.wait = { step: step.id, until: until.toISOString() };
        record(step, 'waiting', { key, until: until.toISOString() });
        return sleepUntil(until, key);
      }
      case 'condition': {
        const yes = await evaluate(step.if, contact, out.context, facts);
        record(step, 'branched', { branch: yes ? 'yes' : 'no' });
        goTo(yes ? step.yes : step.no);
        break;
      }
      case 'update_contact': {
        const tags = new Set(contact.tags);
        for (const tag of step.add_tags ?? []) tags.add(tag);
        for (const tag of step.remove_tags ?? []) tags.delete(tag);
        contact.tags = [...tags];
        for (const [key, value] of Object.entries(step.set_fields ?? {})) {
          if (value === null) delete contact.customFields[key];
          else contact.customFields[key] = value;
        }
        out.contactUpdate = { tags: contact.tags, customFields: contact.customFields };
        record(step, 'updated', { add_tags: step.add_tags ?? [], remove_tags: step.remove_tags ?? [], set_fields: step.set_fields ?? {} });
        goTo(step.next);
        break;
      }
      case 'add_to_segment':
      case 'remove_from_segment':
        (step.type === 'add_to_segment' ? out.segmentAdds : out.segmentRemoves).push(step.segment_id);
        record(step, step.type === 'add_to_segment' ? 'added' : 'removed', { segment_id: step.segment_id });
        goTo(step.next);
        break;
      case 'webhook':
        out.webhooks.push({ stepId: step.id, endpointId: step.endpoint_id, payload: step.payload ?? {} });
        record(step, 'queued', { endpoint_id: step.endpoint_id });
        goTo(step.next);
        break;
      case 'exit':
        record(step, 'completed', { reason: step.reason ?? 'exit step' });
        return end('completed', { exitReason: step.reason ?? 'exit step' });
    }
  }
  // Many steps without a wait (validation forbids endless loops): the rest in the next claim.
  return sleepUntil(now);
}
