import { html } from 'ghtml';
import { TRIGGER_TYPES, WEEKDAYS } from '../automations/automation-definition.ts';
import { fieldName, TRIGGER_FIELDS, type FieldGuard, type FieldSpec } from './dashboard-automations.builder.ts';
import { GOAL_KINDS, goalKind, reentryFits, triggerFits } from './dashboard-automations.fits.ts';

/**
 * The definition editor's building blocks (dashboard-automation-editor.pages.ts): one builder
 * input with its label, hint and choices, a part edited as JSON in place, the problems listed
 * where the builder shows that part, and the trigger-and-rules card. Every `${}` is escaped.
 */

/** A choice of a select: a template, a segment, an endpoint of the workspace. */
export interface Choice {
  value: string;
  label: string;
}

/** What the builder's selects offer, from the workspace. */
export interface BuilderChoices {
  templates: readonly Choice[];
  segments: readonly Choice[];
  endpoints: readonly Choice[];
  /** The workspace's verified sending domains, for the hint under a From field. */
  domains: readonly string[];
}

/** A problem with the definition: its path (`steps.2.from`) and what is wrong. */
export interface Problem {
  path: string;
  message: string;
}

export interface Render {
  choices: BuilderChoices;
  stepIds: string[];
  sendSteps: string[];
  problems: readonly Problem[];
  nextId(): string;
}

export const isObj = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
export const text = (value: unknown) => (typeof value === 'string' ? value : '');
export const jsonText = (value: unknown) => (value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value, null, 2));

export function options(r: Render, spec: FieldSpec, current: string, self?: string): string {
  const source = spec.choices ?? [];
  const list: Choice[] =
    source === 'templates'
      ? [...r.choices.templates]
      : source === 'segments'
        ? [...r.choices.segments]
        : source === 'endpoints'
          ? [...r.choices.endpoints]
          : source === 'steps'
            ? r.stepIds.filter((id) => id !== self).map((id) => ({ value: id, label: id }))
            : source === 'send-steps'
              ? r.sendSteps.map((id) => ({ value: id, label: id }))
              : source.map((value) => ({ value, label: value }));
  // A value the choices do not have is kept (and the check says what is wrong with it).
  if (current !== '' && !list.some((choice) => choice.value === current)) list.push({ value: current, label: `${current} (not found)` });
  const none = spec.none === undefined ? '' : html`<option value="">${spec.none}</option>`;
  return (
    none +
    list
      .map((choice) => html`<option value="${choice.value}"!${choice.value === current ? ' selected' : ''}>${choice.label}</option>`)
      .join('')
  );
}

/** One builder input with its label and hint, shown only for its choice when guarded. */
export function field(r: Render, spec: FieldSpec, path: string, value: unknown, extra: { when?: FieldGuard; self?: string } = {}): string {
  const id = r.nextId();
  const name = fieldName(path, { as: spec.as, when: extra.when });
  const guard = extra.when ? html` data-when="${extra.when.field}=${extra.when.values.join('|')}"` : '';
  const hint = spec.hint ? html`<p class="hint" id="${id}-hint">${spec.hint}</p>` : '';
  const described = spec.hint ? html` aria-describedby="${id}-hint"` : '';
  let input: string;
  if (spec.widget === 'select') {
    input = html`<select id="${id}" name="${name}"!${described}>!${options(r, spec, text(value), extra.self)}</select>`;
  } else if (spec.widget === 'textarea') {
    input = html`<textarea id="${id}" name="${name}" rows="3" spellcheck="false"!${described}>${jsonText(value)}</textarea>`;
  } else if (spec.widget === 'weekdays') {
    const chosen = Array.isArray(value) ? value : [];
    return html`<div class="field"!${guard}><fieldset class="weekdays"!${described}><legend>${spec.label}</legend>!${WEEKDAYS.map((day) => html`<label class="inline"><input type="checkbox" name="${name}" value="${day}"!${chosen.includes(day) ? ' checked' : ''}> ${day}</label>`).join('')}</fieldset>!${hint}</div>`;
  } else {
    const shown = Array.isArray(value) ? value.join(', ') : text(value);
    const mode = spec.widget === 'email' ? ' inputmode="email" autocomplete="off"' : ' autocomplete="off"';
    input = html`<input type="text" id="${id}" name="${name}" value="${shown}"!${mode}!${described}>`;
  }
  return html`<div class="field"!${guard}><label for="${id}">${spec.label}</label>!${input}!${hint}</div>`;
}

/** A part of the definition the builder has no fields for, edited as JSON in place. */
export function rawField(r: Render, label: string, path: string, value: unknown, hint: string): string {
  const id = r.nextId();
  return html`<div class="field"><label for="${id}">${label}</label><textarea id="${id}" name="${fieldName(path, { as: 'json' })}" rows="5" spellcheck="false" aria-describedby="${id}-hint">${jsonText(value)}</textarea><p class="hint" id="${id}-hint">${hint}</p></div>`;
}

export const RAW_HINT = 'The builder has no fields for this as it is: edit it as JSON here or in the JSON view.';

/** The problems at `prefix` and under it (only at it when `exact`), listed where the builder shows that part. */
export function problemsAt(r: Render, prefix: string, exact = false): string {
  const mine = r.problems.filter((p) => p.path === prefix || (!exact && p.path.startsWith(`${prefix}.`)));
  if (mine.length === 0) return '';
  return html`<ul class="problems">!${mine.map((p) => html`<li><code>${p.path}</code> ${p.message}</li>`).join('')}</ul>`;
}

export function triggerCard(r: Render, definition: Record<string, unknown>): string {
  const trigger = definition.trigger;
  let fields: string;
  if (trigger === undefined || triggerFits(trigger)) {
    const type = isObj(trigger) ? text(trigger.type) : 'contact.created';
    const typeSpec: FieldSpec = { key: 'type', label: 'Trigger', widget: 'select', choices: TRIGGER_TYPES };
    fields =
      field(r, typeSpec, 'trigger.type', type) +
      TRIGGER_FIELDS.map((spec) =>
        field(r, spec, `trigger.${spec.key}`, isObj(trigger) ? trigger[spec.key] : undefined, {
          when: { field: fieldName('trigger.type'), values: spec.when!.values },
        }),
      ).join('');
  } else {
    fields = rawField(r, 'Trigger (JSON)', 'trigger', trigger, RAW_HINT);
  }
  const reentry = definition.reentry;
  const reentryFields = reentryFits(reentry)
    ? field(
        r,
        { key: 'mode', label: 'A contact may enter', widget: 'select', choices: ['once', 'always', 'cooldown'] },
        'reentry.mode',
        isObj(reentry) ? reentry.mode : 'once',
      ) +
      field(
        r,
        { key: 'cooldown', label: 'Again after (cool-down)', widget: 'text', hint: 'With cooldown: 30s, 15m, 2h or 3d.' },
        'reentry.cooldown',
        isObj(reentry) ? reentry.cooldown : undefined,
        {
          when: { field: fieldName('reentry.mode'), values: ['cooldown'] },
        },
      )
    : rawField(r, 'Re-entry (JSON)', 'reentry', reentry, RAW_HINT);
  const goal = definition.goal;
  const kind = goalKind(goal);
  let goalFields: string;
  if (kind === null) {
    goalFields = rawField(r, 'Goal (JSON)', 'goal', goal, RAW_HINT);
  } else {
    const id = r.nextId();
    const value = isObj(goal) ? Object.values(goal)[0] : undefined;
    const labels: Record<(typeof GOAL_KINDS)[number], string> = {
      none: 'no goal',
      in_segment: 'the contact is in a segment',
      has_tag: 'the contact has a tag',
      had_event: 'the contact had a custom event',
    };
    goalFields =
      html`<div class="field"><label for="${id}">Goal: a run ends early when</label><select id="${id}" name="k.goal">!${GOAL_KINDS.map((k) => html`<option value="${k}"!${k === kind ? ' selected' : ''}>${labels[k]}</option>`).join('')}</select></div>` +
      field(
        r,
        { key: 'in_segment', label: 'Goal segment', widget: 'select', choices: 'segments', none: '— choose a segment' },
        'goal.in_segment',
        kind === 'in_segment' ? value : undefined,
        {
          when: { field: 'k.goal', values: ['in_segment'] },
        },
      ) +
      field(r, { key: 'has_tag', label: 'Goal tag', widget: 'text' }, 'goal.has_tag', kind === 'has_tag' ? value : undefined, {
        when: { field: 'k.goal', values: ['has_tag'] },
      }) +
      field(r, { key: 'had_event', label: 'Goal event name', widget: 'text' }, 'goal.had_event', kind === 'had_event' ? value : undefined, {
        when: { field: 'k.goal', values: ['had_event'] },
      });
  }
  const timezone = definition.timezone;
  const zone =
    timezone === undefined || typeof timezone === 'string'
      ? field(
          r,
          {
            key: 'timezone',
            label: 'Time zone',
            widget: 'text',
            hint: 'For wait-until steps, when the contact has no timezone field: e.g. Europe/Paris.',
          },
          'timezone',
          timezone ?? 'UTC',
        )
      : rawField(r, 'Time zone (JSON)', 'timezone', timezone, RAW_HINT);
  return html`<fieldset class="card trigger" id="trigger"><legend>Trigger and rules</legend>
    <div class="step-fields">!${fields}!${reentryFields}!${goalFields}!${zone}</div>
    !${problemsAt(r, 'trigger')}!${problemsAt(r, 'reentry')}!${problemsAt(r, 'goal')}!${problemsAt(r, 'timezone')}
  </fieldset>`;
}
