import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  MAX_STEPS,
  durationSeconds,
  parseDefinition,
  triggerKey,
  type DefinitionProblem,
} from '../../src/modules/automations/automation-definition.ts';

type Step = Record<string, unknown>;

/** A definition around `steps`, starting at the first one unless told otherwise. */
function definition(steps: Step[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { trigger: { type: 'contact.created' }, start: steps[0]?.id ?? 'missing', steps, ...extra };
}

const send = (id: string, next: string | null = null): Step => ({
  id,
  type: 'send_email',
  template_id: '0123456789abcdef01234567',
  from: 'hello@mail.example.com',
  next,
});
const wait = (id: string, next: string | null, duration = '1d'): Step => ({ id, type: 'wait', duration, next });
const tag = (id: string, next: string | null): Step => ({ id, type: 'update_contact', add_tags: ['seen'], next });
const branch = (id: string, yes: string | null, no: string | null): Step => ({ id, type: 'condition', if: { has_tag: 'vip' }, yes, no });

function problems(input: unknown): DefinitionProblem[] {
  const parsed = parseDefinition(input);
  if (parsed.ok) throw new Error('expected the definition to be refused');
  return parsed.problems;
}

function accepted(input: unknown) {
  const parsed = parseDefinition(input);
  if (!parsed.ok) throw new Error(`expected the definition to pass: ${JSON.stringify(parsed.problems)}`);
  return parsed.definition;
}

describe('parseDefinition', () => {
  it('accepts a welcome series and fills the defaults (re-entry once, UTC, no goal)', () => {
    const parsed = accepted(definition([send('welcome', 'pause'), wait('pause', 'tips', '2d'), send('tips')]));
    expect(parsed.reentry).toEqual({ mode: 'once' });
    expect(parsed.timezone).toBe('UTC');
    expect(parsed.goal).toBeUndefined();
    expect(parsed.steps.map((s) => s.id)).toEqual(['welcome', 'pause', 'tips']);
  });

  it('refuses a step that cannot be reached from the start', () => {
    const found = problems(definition([send('a'), send('orphan')]));
    expect(found).toEqual([{ path: 'steps.1', message: 'step "orphan" cannot be reached from the start' }]);
  });

  it('refuses a start that names no step', () => {
    expect(problems(definition([send('a')], { start: 'nowhere' }))).toContainEqual({
      path: 'start',
      message: 'there is no step "nowhere"',
    });
  });

  it('refuses a loop without a wait, naming the loop', () => {
    const found = problems(definition([branch('check', 'tag', null), tag('tag', 'check')]));
    expect(found).toHaveLength(1);
    expect(found[0]!.path).toBe('steps');
    expect(found[0]!.message).toMatch(/the loop check → tag → check has no wait/);
  });

  it('accepts the same loop with a wait in it', () => {
    accepted(definition([branch('check', 'tag', null), tag('tag', 'later'), wait('later', 'check')]));
  });

  it('accepts a loop through a wait_for_event or a wait_until', () => {
    const waitForOpen: Step = {
      id: 'opened',
      type: 'wait_for_event',
      event: 'email.opened',
      step: 'mail',
      timeout: '3d',
      next: null,
      timeout_next: 'mail',
    };
    accepted(definition([send('mail', 'opened'), waitForOpen]));
    accepted(definition([send('mail', 'morning'), { id: 'morning', type: 'wait_until', time: '09:00', weekdays: ['mon'], next: 'mail' }]));
  });

  it('refuses a step that leads to itself, even a wait', () => {
    expect(problems(definition([wait('again', 'again')]))).toContainEqual({
      path: 'steps.0.next',
      message: 'a step cannot lead to itself',
    });
  });

  it('refuses an unknown step kind', () => {
    const found = problems(definition([{ id: 'sms', type: 'send_sms', next: null }]));
    expect(found).toHaveLength(1);
    expect(found[0]!.path).toMatch(/^steps\.0/);
  });

  it('refuses an unknown field on a step (strict objects)', () => {
    expect(problems(definition([{ ...send('a'), delay: '1d' }]))[0]!.path).toMatch(/^steps\.0/);
  });

  it.each([
    ['next', (target: string) => send('a', target)],
    ['yes', (target: string) => branch('a', target, null)],
    ['no', (target: string) => branch('a', null, target)],
    [
      'timeout_next',
      (target: string) => ({ id: 'a', type: 'wait_for_event', event: 'event', name: 'paid', timeout: '1d', timeout_next: target }),
    ],
  ])('refuses a %s that names no step', (field, step) => {
    expect(problems(definition([step('ghost')]))).toContainEqual({ path: `steps.0.${field}`, message: 'there is no step "ghost"' });
  });

  it('refuses a step id used twice, with the path of the second', () => {
    expect(problems(definition([send('same', 'same2'), { ...send('same2'), id: 'same' }]))).toContainEqual({
      path: 'steps.1.id',
      message: 'step id "same" is used twice',
    });
  });

  it('refuses an email wait that names no send step, or names a step that is not one', () => {
    const noStep: Step = { id: 'w', type: 'wait_for_event', event: 'email.clicked', timeout: '1d', next: null };
    expect(problems(definition([noStep]))).toContainEqual({
      path: 'steps.0.step',
      message: 'an email event wait names the send_email step whose email it waits on',
    });
    const notSend: Step = { ...noStep, step: 'pause' };
    expect(problems(definition([notSend, wait('pause', null)], { start: 'w' }))).toContainEqual({
      path: 'steps.0.step',
      message: '"pause" is not a send_email step',
    });
  });

  it('refuses a custom event wait without the event name', () => {
    const step: Step = { id: 'w', type: 'wait_for_event', event: 'event', timeout: '1d', next: null };
    expect(problems(definition([step]))).toContainEqual({ path: 'steps.0.name', message: 'a custom event wait needs the event name' });
  });

  it('lists every problem at once, each with its path', () => {
    expect(problems(definition([send('a', 'ghost'), send('a')]))).toEqual([
      { path: 'steps.1.id', message: 'step id "a" is used twice' },
      { path: 'steps.0.next', message: 'there is no step "ghost"' },
    ]);
    const schemaOnly = problems(
      definition([
        { ...wait('w', null), duration: '0s' },
        { ...wait('x', null), duration: 'soon' },
      ]),
    );
    expect(schemaOnly.map((p) => p.path)).toEqual(['steps.0.duration', 'steps.1.duration']);
  });

  describe('durations: at least one second, at most 180 days', () => {
    it.each(['1s', '1m', '1h', '1d', '999999s', '180d', '4320h', '259200m'])('accepts %s', (duration) => {
      accepted(definition([wait('w', null, duration)]));
    });

    it.each([
      ['0s', 'must be at least one second'],
      ['', 'must be a number and a unit: 30s, 15m, 2h or 3d'],
      ['0d', 'must be at least one second'],
      ['181d', 'must be at most 180 days'],
      ['4321h', 'must be at most 180 days'],
      ['259201m', 'must be at most 180 days'],
      ['1000000s', 'must be a number and a unit: 30s, 15m, 2h or 3d'],
      ['1w', 'must be a number and a unit: 30s, 15m, 2h or 3d'],
      ['1.5h', 'must be a number and a unit: 30s, 15m, 2h or 3d'],
      ['-1s', 'must be a number and a unit: 30s, 15m, 2h or 3d'],
    ])('refuses %j (%s), with that one message', (duration, message) => {
      expect(problems(definition([wait('w', null, duration)]))).toEqual([{ path: 'steps.0.duration', message }]);
    });

    it('applies the same bounds to a wait_for_event timeout and a re-entry cool-down', () => {
      const step: Step = { id: 'w', type: 'wait_for_event', event: 'event', name: 'paid', timeout: '181d', next: null };
      expect(problems(definition([step]))).toContainEqual({ path: 'steps.0.timeout', message: 'must be at most 180 days' });
      expect(problems(definition([send('a')], { reentry: { mode: 'cooldown', cooldown: '0s' } }))).toContainEqual({
        path: 'reentry.cooldown',
        message: 'must be at least one second',
      });
      accepted(definition([send('a')], { reentry: { mode: 'cooldown', cooldown: '180d' } }));
    });

    it('reads durations in seconds', () => {
      expect(durationSeconds('1s')).toBe(1);
      expect(durationSeconds('180d')).toBe(15_552_000);
      expect(durationSeconds('2h')).toBe(7_200);
      expect(durationSeconds('soon')).toBeNull();
    });
  });

  it('refuses an unknown time zone and accepts an IANA one', () => {
    expect(problems(definition([send('a')], { timezone: 'Mars/Olympus' }))[0]!.path).toBe('timezone');
    expect(accepted(definition([send('a')], { timezone: 'Europe/Paris' })).timezone).toBe('Europe/Paris');
  });

  it(`refuses more than ${MAX_STEPS} steps and none`, () => {
    const many = Array.from({ length: MAX_STEPS + 1 }, (_, i) => tag(`s${i}`, i < MAX_STEPS ? `s${i + 1}` : null));
    expect(problems(definition(many))[0]!.path).toBe('steps');
    expect(problems(definition([]))).toContainEqual({ path: 'steps', message: 'must have at least one step' });
  });

  it('keys a trigger on what enrolment looks up', () => {
    expect(triggerKey({ type: 'contact.created' })).toBeNull();
    expect(triggerKey({ type: 'tag.added', tag: 'vip' })).toBe('vip');
    expect(triggerKey({ type: 'event', name: 'order.paid' })).toBe('order.paid');
    expect(triggerKey({ type: 'segment.joined', segment_id: 'seg1' })).toBe('seg1');
    expect(triggerKey({ type: 'email.opened', template_id: 'tpl1' })).toBe('template:tpl1');
    expect(triggerKey({ type: 'email.clicked', broadcast_id: 'b1' })).toBe('broadcast:b1');
    expect(triggerKey({ type: 'email.clicked' })).toBeNull();
  });
});

describe('docs/automations.md', () => {
  it('holds definitions that pass the whole-definition checks', () => {
    const text = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'automations.md'), 'utf8');
    const definitions = [...text.matchAll(/```json\n([\s\S]*?)```/g)]
      .map((match) => JSON.parse(match[1]!) as Record<string, unknown>)
      .filter((block) => 'steps' in block);
    expect(definitions.length).toBeGreaterThan(0);
    for (const block of definitions) accepted(block);
  });
});
