import { describe, expect, it } from 'vitest';
import { parseDefinition } from '../../src/modules/automations/automation-definition.ts';
import type { SignedIn } from '../../src/modules/dashboard/dashboard-auth.service.ts';
import { assembleDefinition, fieldName, parseFieldName } from '../../src/modules/dashboard/dashboard-automations.builder.ts';
import { addStep, flowOf, removeStep, slotsOf } from '../../src/modules/dashboard/dashboard-automations.flow.ts';
import type { EditorModel } from '../../src/modules/dashboard/dashboard-automation-editor.pages.ts';
import { newAutomationPage } from '../../src/modules/dashboard/dashboard-automations.pages.ts';
import { formFields } from '../support/html-form.ts';

const signedIn: SignedIn = {
  sessionId: 's',
  csrfToken: 'token',
  userId: 'u',
  orgId: 'o',
  orgName: 'Acme',
  email: 'ada@example.com',
  name: 'Ada',
  role: 'owner',
};

const choices = {
  templates: [{ value: 'aaaaaaaaaaaaaaaaaaaaaaaa', label: 'Welcome' }],
  segments: [{ value: 'bbbbbbbbbbbbbbbbbbbbbbbb', label: 'VIPs' }],
  endpoints: [{ value: 'cccccccccccccccccccccccc', label: 'CRM' }],
  domains: ['mail.example.com'],
};

/** The builder's fields as a browser without JavaScript sends them for `definition`. */
function builderFieldsOf(definition: unknown): [string, string][] {
  const json = JSON.stringify(definition, null, 2);
  const model: EditorModel = { signedIn, name: 'A', description: '', definition, json, base: json, choices };
  return formFields(newAutomationPage(model));
}

/** Every step type and condition kind the builder has fields for, and what it has none for. */
const EVERYTHING = {
  trigger: { type: 'tag.added', tag: 'trial' },
  reentry: { mode: 'cooldown', cooldown: '7d' },
  goal: { has_tag: 'customer' },
  timezone: 'Europe/Paris',
  start: 'welcome',
  steps: [
    {
      id: 'welcome',
      type: 'send_email',
      template_id: 'aaaaaaaaaaaaaaaaaaaaaaaa',
      from: 'hello@mail.example.com',
      from_name: 'Acme <Team> & "co"',
      reply_to: 'help@mail.example.com',
      next: 'pause',
    },
    { id: 'pause', type: 'wait', duration: '2d', next: 'morning' },
    { id: 'morning', type: 'wait_until', time: '09:30', weekdays: ['mon', 'wed'], next: 'opened' },
    { id: 'opened', type: 'wait_for_event', event: 'email.opened', step: 'welcome', timeout: '3d', next: 'tag', timeout_next: 'is-vip' },
    { id: 'tag', type: 'update_contact', add_tags: ['engaged', 'warm'], set_fields: { plan: 'pro', seats: 3 }, next: 'bought' },
    { id: 'bought', type: 'wait_for_event', event: 'event', name: 'order.paid', timeout: '1h', next: 'clicked', timeout_next: 'crm' },
    { id: 'clicked', type: 'condition', if: { email: 'clicked', step: 'welcome' }, yes: 'vips', no: 'unvip' },
    { id: 'is-vip', type: 'condition', if: { field: 'custom.score', op: 'gt', value: '10' }, yes: 'both', no: 'done' },
    { id: 'both', type: 'condition', if: { all: [{ has_tag: 'a' }, { not: { in_segment: 'bbbbbbbbbbbbbbbbbbbbbbbb' } }] }, yes: 'done' },
    { id: 'vips', type: 'add_to_segment', segment_id: 'bbbbbbbbbbbbbbbbbbbbbbbb', next: 'done' },
    { id: 'unvip', type: 'remove_from_segment', segment_id: 'bbbbbbbbbbbbbbbbbbbbbbbb', next: 'done' },
    { id: 'crm', type: 'webhook', endpoint_id: 'cccccccccccccccccccccccc', payload: { source: 'automation' }, next: 'done' },
    { id: 'done', type: 'exit', reason: 'finished' },
    // The builder has no fields for these: they travel as JSON.
    { id: 'odd', type: 'teleport', to: 'mars' },
    { id: 'numbered', type: 'wait', duration: 30 },
  ],
};

describe("the automation builder's fields", () => {
  it('names a field by its path, how it is read and the choice it belongs to', () => {
    const name = fieldName('steps.3.step', { when: { field: 'd.steps.3.event', values: ['email.opened', 'email.clicked'] } });
    expect(name).toBe('d.steps.3.step@d.steps.3.event=email.opened|email.clicked');
    expect(parseFieldName(name)).toEqual({
      path: ['steps', '3', 'step'],
      when: { field: 'd.steps.3.event', values: ['email.opened', 'email.clicked'] },
    });
    expect(parseFieldName('d.steps.0.weekdays~list')).toEqual({ path: ['steps', '0', 'weekdays'], as: 'list' });
    for (const other of ['name', 'definition', 'k.goal', 'd.', 'd.__proto__.x', 'd.steps.0.constructor', 'd.a..b'])
      expect(parseFieldName(other), other).toBeNull();
  });

  it('assembles a definition: empty fields left out, lists split, JSON parsed (kept as text when it does not parse), other choices ignored', () => {
    const definition = assembleDefinition([
      ['d.trigger.type', 'event'],
      ['d.trigger.tag@d.trigger.type=tag.added', 'ignored'],
      ['d.trigger.name@d.trigger.type=event', ' signed.up '],
      ['d.start', 'a'],
      ['d.steps.0.id', 'a'],
      ['d.steps.0.type', 'update_contact'],
      ['d.steps.0.add_tags~list', 'x, y,,z '],
      ['d.steps.0.set_fields~json', '{"plan": "pro"}'],
      ['d.steps.0.next', ''],
      ['d.steps.2.id', 'b'],
      ['d.steps.2.type', 'wait_until'],
      ['d.steps.2.weekdays~list', 'mon'],
      ['d.steps.2.weekdays~list', 'fri'],
      ['d.steps.2.payload~json', '{not json'],
      ['k.goal', 'none'],
      ['d.goal.has_tag@k.goal=has_tag', 'vip'],
      ['_csrf', 'token'],
    ]);
    expect(definition).toEqual({
      trigger: { type: 'event', name: 'signed.up' },
      start: 'a',
      steps: [
        { id: 'a', type: 'update_contact', add_tags: ['x', 'y', 'z'], set_fields: { plan: 'pro' } },
        { id: 'b', type: 'wait_until', weekdays: ['mon', 'fri'], payload: '{not json' },
      ],
    });
  });

  it('gives back exactly the definition it was drawn from, every step type and condition kind included', () => {
    expect(assembleDefinition(builderFieldsOf(EVERYTHING))).toEqual(EVERYTHING);
    const parsed = parseDefinition({ ...EVERYTHING, steps: EVERYTHING.steps.slice(0, 13) });
    expect(parsed.ok, JSON.stringify(parsed)).toBe(true);
    if (parsed.ok) expect(assembleDefinition(builderFieldsOf(parsed.definition))).toEqual(parsed.definition);
  });

  it('draws a date trigger with its fields and gives it back, the offset a number', () => {
    const parsed = parseDefinition({
      trigger: { type: 'date', field: 'custom.birthday', repeat: 'yearly', offset_days: -3, at: '10:30', zone: 'contact' },
      timezone: 'Europe/Paris',
      start: 'e',
      steps: [{ id: 'e', type: 'exit' }],
    });
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
    expect(assembleDefinition(builderFieldsOf(parsed.definition))).toEqual(parsed.definition);
    expect(
      assembleDefinition([
        ['d.trigger.type', 'date'],
        ['d.trigger.field@d.trigger.type=date', 'created_at'],
        ['d.trigger.repeat@d.trigger.type=date', 'once'],
        ['d.trigger.offset_days~json@d.trigger.type=date', '7'],
        ['d.trigger.at@d.trigger.type=date', ''],
        ['d.trigger.zone@d.trigger.type=date', ''],
        ['d.trigger.tag@d.trigger.type=tag.added', 'ignored'],
      ]),
    ).toEqual({ trigger: { type: 'date', field: 'created_at', repeat: 'once', offset_days: 7 } });
  });

  it('keeps a part it has no fields for as JSON: a trigger, a goal, a condition value that is not text', () => {
    const odd = {
      trigger: { type: 'contact.created', extra: true },
      reentry: { mode: 'sometimes' },
      goal: { in_segment: 'x', has_tag: 'y' },
      timezone: 'UTC',
      start: 's',
      steps: [
        { id: 's', type: 'condition', if: { field: 'status', op: 'eq', value: 3 }, yes: 'e', no: 'e' },
        { id: 'e', type: 'exit' },
      ],
    };
    expect(assembleDefinition(builderFieldsOf(odd))).toEqual(odd);
  });
});

describe('the flow the builder draws', () => {
  it('follows the steps from the start, indents both branches, draws a step once and lists the unreachable apart', () => {
    const flow = flowOf(EVERYTHING);
    const ids = (entries: ReturnType<typeof flowOf>['main']): unknown[] =>
      entries.map((e) =>
        e.kind === 'jump'
          ? `→${e.target}`
          : e.branches.length === 0
            ? EVERYTHING.steps[e.index]!.id
            : { [EVERYTHING.steps[e.index]!.id]: Object.fromEntries(e.branches.map((b) => [b.label, ids(b.chain)])) },
      );
    expect(ids(flow.main)).toEqual([
      'welcome',
      'pause',
      'morning',
      {
        opened: {
          event: [
            'tag',
            { bought: { event: [{ clicked: { yes: ['vips', 'done'], no: ['unvip', '→done'] } }], timeout: ['crm', '→done'] } },
          ],
          timeout: [{ 'is-vip': { yes: [{ both: { yes: ['→done'], no: [] } }], no: ['→done'] } }],
        },
      },
    ]);
    expect(flow.detached.map(ids)).toEqual([['odd'], ['numbered']]);
  });
});

describe('adding and removing steps', () => {
  const base = {
    trigger: { type: 'contact.created' },
    start: 'send-1',
    steps: [
      { id: 'send-1', type: 'send_email', next: 'check-1' },
      { id: 'check-1', type: 'condition', if: { email: 'opened', step: 'send-1' }, yes: 'exit-1' },
      { id: 'exit-1', type: 'exit' },
    ],
  };

  it('offers the start, each next and each branch, the open ends marked', () => {
    expect(slotsOf(base)).toEqual([
      { value: 'start', label: 'At the start (before “send-1”)', open: false },
      { value: '0.next', label: 'After “send-1”', open: false },
      { value: '1.yes', label: 'After “check-1”, when yes', open: false },
      { value: '1.no', label: 'After “check-1”, when no', open: true },
      { value: 'detached', label: 'Not connected yet', open: false },
    ]);
  });

  it('puts a new step in a slot, what the slot led to following it', () => {
    expect(addStep(base, 'wait', '2.next')).toBeNull();
    expect(addStep(base, 'wait', '9.next')).toBeNull();
    const wait = addStep(base, 'wait', '0.next')!;
    expect(wait.id).toBe('wait-1');
    expect(wait.definition.steps).toEqual([
      { id: 'send-1', type: 'send_email', next: 'wait-1' },
      { id: 'wait-1', type: 'wait', duration: '1d', next: 'check-1' },
      base.steps[1],
      base.steps[2],
    ]);
    const reminder = addStep(base, 'send_email', '1.no')!;
    expect(reminder.id).toBe('send-2');
    expect((reminder.definition.steps as unknown[])[1]).toMatchObject({ id: 'check-1', no: 'send-2' });
    const first = addStep(base, 'condition', 'start')!.definition;
    expect(first.start).toBe('check-2');
    expect((first.steps as unknown[])[0]).toEqual({
      id: 'check-2',
      type: 'condition',
      if: { email: 'opened', step: 'send-1' },
      yes: 'send-1',
    });
    expect(base.steps).toHaveLength(3);
  });

  it('removes a step, whatever led to it leading on to what it led to', () => {
    const withoutCheck = removeStep(base, 1);
    expect(withoutCheck.steps).toEqual([
      { id: 'send-1', type: 'send_email', next: 'exit-1' },
      { id: 'exit-1', type: 'exit' },
    ]);
    const withoutFirst = removeStep(base, 0);
    expect(withoutFirst.start).toBe('check-1');
    const withoutExit = removeStep(base, 2);
    expect((withoutExit.steps as unknown[])[1]).toEqual({ id: 'check-1', type: 'condition', if: { email: 'opened', step: 'send-1' } });
  });
});
