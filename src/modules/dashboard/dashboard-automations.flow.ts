/**
 * The automation builder's flow, pure: the order it draws the steps in (from the start, branches
 * indented, each step once), the places a step can be added, and adding or removing one. It
 * reads the definition loosely, as the builder does: a draft need not be valid yet.
 */
import type { StepType } from '../automations/automation-definition.ts';
import { exitsOf, isObj, isString, type Obj } from './dashboard-automations.builder.ts';

const clone = <T>(value: T): T => structuredClone(value);

const idOf = (step: unknown): string | undefined => (isObj(step) && isString(step.id) ? step.id : undefined);

/** One entry of the flow: a step's card (with its branches), or a reference to a step drawn elsewhere (or missing). */
export type FlowEntry =
  | { kind: 'card'; index: number; branches: { key: string; label: string; chain: FlowEntry[] }[] }
  | { kind: 'jump'; target: string; index: number | undefined };

/**
 * The steps as the builder draws them: from `start`, each step's card followed by the step it
 * leads to; a condition's and a wait-for-event's two branches indented beneath it. A step is
 * drawn once, where the flow first reaches it; later references to it (a loop, two branches
 * meeting) are jumps. `detached`: chains of the steps the start does not reach.
 */
export function flowOf(definition: Obj & { steps: unknown[] }): { main: FlowEntry[]; detached: FlowEntry[][] } {
  const steps = definition.steps;
  const indexOf = new Map<string, number>();
  steps.forEach((step, index) => {
    const id = idOf(step);
    if (id !== undefined && !indexOf.has(id)) indexOf.set(id, index);
  });
  const drawn = new Set<number>();
  const chainAt = (first: number | string | undefined): FlowEntry[] => {
    const chain: FlowEntry[] = [];
    let at = first;
    while (at !== undefined) {
      const index = typeof at === 'number' ? at : indexOf.get(at);
      if (index === undefined || drawn.has(index)) {
        chain.push({ kind: 'jump', target: typeof at === 'string' ? at : (idOf(steps[at]) ?? ''), index });
        break;
      }
      drawn.add(index);
      const step = steps[index];
      const type = isObj(step) ? step.type : undefined;
      const exits = exitsOf(type);
      const target = (key: string) => (isObj(step) && isString(step[key]) ? step[key] : undefined);
      if (exits.length === 2) {
        const card: FlowEntry = { kind: 'card', index, branches: [] };
        chain.push(card);
        for (const exit of exits) card.branches.push({ ...exit, chain: chainAt(target(exit.key)) });
        break;
      }
      chain.push({ kind: 'card', index, branches: [] });
      at = exits.length === 1 ? target('next') : undefined;
    }
    return chain;
  };
  const main = isString(definition.start) && indexOf.has(definition.start) ? chainAt(definition.start) : [];
  const detached: FlowEntry[][] = [];
  steps.forEach((_step, index) => {
    if (!drawn.has(index)) detached.push(chainAt(index));
  });
  return { main, detached };
}

/** A place a new step can go: the start, a step's `next` or one of its branches, or nowhere yet. */
export interface Slot {
  value: string;
  label: string;
  /** Nothing follows there yet (an open end of the flow). */
  open: boolean;
}

/** Where a step can be added, in the steps' order; the first open end is the usual choice. */
export function slotsOf(definition: Obj & { steps: unknown[] }): Slot[] {
  const first = idOf(definition.steps[0]);
  const start = isString(definition.start) ? definition.start : first;
  const slots: Slot[] = [{ value: 'start', label: start ? `At the start (before “${start}”)` : 'At the start', open: !start }];
  definition.steps.forEach((step, index) => {
    if (!isObj(step)) return;
    const id = idOf(step) ?? `step ${index + 1}`;
    const exits = exitsOf(step.type);
    for (const exit of exits) {
      const label =
        exits.length === 1
          ? `After “${id}”`
          : step.type === 'condition'
            ? `After “${id}”, when ${exit.label}`
            : `After “${id}”, ${exit.key === 'next' ? 'when the event comes' : 'on timeout'}`;
      slots.push({ value: `${index}.${exit.key}`, label, open: !isString(step[exit.key]) });
    }
  });
  slots.push({ value: 'detached', label: 'Not connected yet', open: false });
  return slots;
}

/** A step's id prefix when the builder adds one. */
const ID_PREFIX: Record<StepType, string> = {
  send_email: 'send',
  wait: 'wait',
  wait_until: 'wait-until',
  wait_for_event: 'wait-event',
  condition: 'check',
  update_contact: 'update',
  add_to_segment: 'add-segment',
  remove_from_segment: 'remove-segment',
  webhook: 'webhook',
  exit: 'exit',
};

/** The first `<prefix>-<n>` no step has. */
export function newStepId(steps: readonly unknown[], type: StepType): string {
  const taken = new Set(steps.map(idOf));
  for (let n = 1; ; n += 1) if (!taken.has(`${ID_PREFIX[type]}-${n}`)) return `${ID_PREFIX[type]}-${n}`;
}

/** A new step's fields: sensible values where the format has no empty one. */
function newStep(type: StepType, id: string, steps: readonly unknown[]): Obj {
  const firstSend = steps.map((s) => (isObj(s) && s.type === 'send_email' ? idOf(s) : undefined)).find(isString);
  switch (type) {
    case 'wait':
      return { id, type, duration: '1d' };
    case 'wait_until':
      return { id, type, time: '09:00' };
    case 'wait_for_event':
      return { id, type, event: 'email.opened', ...(firstSend ? { step: firstSend } : {}), timeout: '3d' };
    case 'condition':
      return { id, type, if: { email: 'opened', ...(firstSend ? { step: firstSend } : {}) } };
    default:
      return { id, type };
  }
}

/**
 * The definition with a new step of `type` at `slot` (slotsOf): what the slot led to follows
 * the new step (its `next`, a condition's yes branch, a wait's event branch; an exit ends
 * there). Returns the new step's id too; null when `slot` is no such place.
 */
export function addStep(definition: Obj & { steps: unknown[] }, type: StepType, slot: string): { definition: Obj; id: string } | null {
  const next = clone(definition);
  const id = newStepId(next.steps, type);
  const step = newStep(type, id, next.steps);
  const match = /^(\d+)\.(next|yes|no|timeout_next)$/.exec(slot);
  const owner = match ? next.steps[Number(match[1])] : undefined;
  const key = match?.[2];
  // Only a place slotsOf offers: the start, nowhere yet, or an exit its step has.
  if (slot !== 'start' && slot !== 'detached' && !(isObj(owner) && exitsOf(owner.type).some((exit) => exit.key === key))) return null;
  let follows: unknown;
  if (slot === 'start') follows = next.start;
  else if (isObj(owner) && key) follows = owner[key];
  if (isString(follows)) {
    const onward = exitsOf(type)[0]?.key;
    if (onward) step[onward] = follows;
  }
  if (slot === 'start') {
    next.start = id;
    next.steps.unshift(step);
  } else if (isObj(owner) && key) {
    owner[key] = id;
    next.steps.splice(Number(match?.[1]) + 1, 0, step);
  } else {
    next.steps.push(step);
    if (!isString(next.start)) next.start = id;
  }
  return { definition: next, id };
}

/**
 * The definition without the step at `index`: whatever led to it leads to what it led to
 * (its `next`, a condition's yes branch, a wait's event branch; the end for an exit). Steps
 * only its other branch reached are kept, not connected, for the person to place or remove.
 */
export function removeStep(definition: Obj & { steps: unknown[] }, index: number): Obj {
  const next = clone(definition);
  const removed = next.steps[index];
  if (removed === undefined) return next;
  next.steps.splice(index, 1);
  const id = idOf(removed);
  if (id === undefined) return next;
  const onward = isObj(removed)
    ? exitsOf(removed.type)
        .map((exit) => removed[exit.key])
        .find(isString)
    : undefined;
  for (const step of next.steps) {
    if (!isObj(step)) continue;
    for (const key of ['next', 'yes', 'no', 'timeout_next']) {
      if (step[key] !== id) continue;
      if (onward !== undefined && onward !== step.id) step[key] = onward;
      else delete step[key];
    }
  }
  if (next.start === id) {
    const fallback = idOf(next.steps[0]);
    if (onward !== undefined) next.start = onward;
    else if (fallback !== undefined) next.start = fallback;
    else delete next.start;
  }
  return next;
}
