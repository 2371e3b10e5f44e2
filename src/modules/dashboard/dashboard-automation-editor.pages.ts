import { html } from 'ghtml';
import { STEP_TYPES } from '../automations/automation-definition.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import {
  field,
  isObj,
  options,
  problemsAt,
  RAW_HINT,
  rawField,
  text,
  triggerCard,
  type BuilderChoices,
  type Problem,
  type Render,
} from './dashboard-automation-fields.pages.ts';
import {
  BRANCH_FIELD,
  CONDITION_FIELDS,
  CONDITION_KINDS,
  fieldName,
  STEP_FIELDS,
  type FieldSpec,
} from './dashboard-automations.builder.ts';
import { builderFits, conditionKind, stepFits } from './dashboard-automations.fits.ts';
import { flowOf, slotsOf, type FlowEntry } from './dashboard-automations.flow.ts';
import { csrfField } from './dashboard.pages.ts';

/**
 * The automation definition editor (on the new-automation page and an automation's page): one
 * definition shown two ways, a builder (the trigger and rules, then the steps as a flow of
 * cards, a condition's and a wait-for-event's branches indented beneath it) and its JSON. Both
 * are fields of one form and work without JavaScript (the server draws the page again for every
 * button); assets/automation-builder.js keeps the JSON in step as the builder is edited. Every
 * `${}` is escaped: names, ids and JSON are the workspace's.
 */

export type { BuilderChoices, Choice, Problem } from './dashboard-automation-fields.pages.ts';

export interface EditorModel {
  signedIn: SignedIn;
  name: string;
  description: string;
  /** The definition the builder shows (as edited: maybe not valid yet). */
  definition: unknown;
  /** The JSON view's text. */
  json: string;
  /** The JSON the builder was drawn from ('' when the builder cannot show the definition). */
  base: string;
  choices: BuilderChoices;
  problems?: readonly Problem[] | undefined;
  /** The definition was checked and is valid. */
  valid?: boolean;
  error?: string | undefined;
  notice?: string | undefined;
  /** Where "Add a step" adds, as last chosen. */
  slot?: string | undefined;
}

function conditionFields(r: Render, index: number, condition: unknown): string {
  const kind = conditionKind(condition);
  const control = `k.steps.${index}.if`;
  const id = r.nextId();
  const select = html`<div class="field"><label for="${id}">If</label><select id="${id}" name="${control}">!${Object.entries(
    CONDITION_KINDS,
  )
    .map(([k, { label }]) => html`<option value="${k}"!${k === kind ? ' selected' : ''}>${label}</option>`)
    .join('')}</select></div>`;
  const groups = Object.entries(CONDITION_KINDS).map(([k, { fields }]) => {
    const guard = { field: control, values: [k] };
    if (k === 'json') {
      const jsonSpec: FieldSpec = {
        key: 'if',
        label: 'Condition (JSON)',
        widget: 'textarea',
        as: 'json',
        hint: 'all, any, not, or one condition.',
      };
      return field(r, jsonSpec, `steps.${index}.if`, condition, { when: guard });
    }
    return (fields as readonly string[])
      .map((key) =>
        field(r, CONDITION_FIELDS[key]!, `steps.${index}.if.${key}`, kind === k && isObj(condition) ? condition[key] : undefined, {
          when: guard,
        }),
      )
      .join('');
  });
  return select + groups.join('');
}

function stepCard(r: Render, definition: { steps: unknown[] }, index: number, branches: string): string {
  const step = definition.steps[index];
  const remove = (label: string) =>
    html`<button type="submit" name="action" value="remove:${String(index)}" class="link remove" formaction="#flow">Remove ${label}</button>`;
  const problems = problemsAt(r, `steps.${index}`);
  if (!stepFits(step)) {
    const id = isObj(step) && typeof step.id === 'string' ? step.id : `step ${index + 1}`;
    return html`<fieldset class="step raw" id="step-${String(index)}"><legend><span class="step-type">JSON</span> <code>${id}</code></legend>
      !${rawField(r, `Step “${id}” (JSON)`, `steps.${index}`, step, RAW_HINT)}!${problems}!${remove(`step “${id}”`)}
    </fieldset>!${branches}`;
  }
  const type = step.type;
  const own = STEP_FIELDS[type].map((spec) =>
    field(r, spec, `steps.${index}.${spec.key}`, step[spec.key], {
      self: step.id,
      ...(spec.when ? { when: { field: fieldName(`steps.${index}.${spec.when.key}`), values: spec.when.values } } : {}),
    }),
  );
  const body = type === 'condition' ? conditionFields(r, index, step.if) : own.join('');
  return html`<fieldset class="step ${type}" id="step-${String(index)}" aria-label="Step ${step.id} (${type})"><legend><span class="step-type">${type}</span> <code>${step.id}</code></legend>
    <input type="hidden" name="${fieldName(`steps.${index}.id`)}" value="${step.id}"><input type="hidden" name="${fieldName(`steps.${index}.type`)}" value="${type}">
    <div class="step-fields">!${body}</div>!${problems}!${remove(`step “${step.id}”`)}
  </fieldset>!${branches}`;
}

function chain(r: Render, definition: { steps: unknown[] }, entries: readonly FlowEntry[]): string {
  const items = entries.map((entry) => {
    if (entry.kind === 'jump') {
      return entry.index === undefined
        ? html`<li class="jump missing">→ <code>${entry.target}</code> (there is no such step)</li>`
        : html`<li class="jump">→ continues at <a href="#step-${String(entry.index)}"><code>${entry.target}</code></a></li>`;
    }
    const step = definition.steps[entry.index] as Record<string, unknown>;
    const branches =
      entry.branches.length === 0
        ? ''
        : html`<div class="branches">!${entry.branches
            .map((branch) => {
              const target = field(r, { ...BRANCH_FIELD, key: branch.key }, `steps.${entry.index}.${branch.key}`, step[branch.key], {
                self: text(step.id),
              });
              return html`<div class="branch ${branch.label}"><p class="branch-label"><span class="branch-name">${branch.label}</span></p>!${target}!${chain(r, definition, branch.chain)}</div>`;
            })
            .join('')}</div>`;
    return html`<li>!${stepCard(r, definition, entry.index, branches)}</li>`;
  });
  const last = entries.at(-1);
  const ends = last?.kind === 'card' && last.branches.length === 0 && (definition.steps[last.index] as { type?: unknown }).type !== 'exit';
  const end = ends || entries.length === 0 ? html`<li class="end" aria-label="End">end</li>` : '';
  return html`<ol class="flow">!${items.join('')}!${end}</ol>`;
}

function stepsSection(r: Render, definition: Record<string, unknown> & { steps: unknown[] }, slot: string | undefined): string {
  const flow = flowOf(definition);
  const startId = r.nextId();
  const start =
    definition.start === undefined || typeof definition.start === 'string'
      ? html`<div class="field"><label for="${startId}">First step</label><select id="${startId}" name="${fieldName('start')}">!${options(r, { key: 'start', label: '', widget: 'select', choices: 'steps', none: '— choose the first step' }, text(definition.start))}</select></div>`
      : rawField(r, 'First step (JSON)', 'start', definition.start, RAW_HINT);
  const slots = slotsOf(definition);
  const chosen = slots.find((s) => s.value === slot)?.value ?? slots.find((s) => s.open)?.value ?? slots.at(-2)?.value ?? 'start';
  const typeId = r.nextId();
  const slotId = r.nextId();
  return html`<section class="card steps" id="flow" aria-labelledby="flow-title"><h3 id="flow-title">Steps</h3>
    !${start}!${problemsAt(r, 'start')}
    !${chain(r, definition, flow.main)}
    !${
      flow.detached.length === 0
        ? ''
        : html`<h4>Not connected to the flow</h4><p class="hint">The first step does not lead to these: connect them with a “Then” or a branch, or remove them.</p>!${flow.detached.map((entries) => chain(r, definition, entries)).join('')}`
    }
    !${problemsAt(r, 'steps', true)}
    <div class="add-step">
      <div class="field"><label for="${typeId}">New step</label><select id="${typeId}" name="add_type">!${STEP_TYPES.map((type) => html`<option value="${type}">${type}</option>`).join('')}</select></div>
      <div class="field"><label for="${slotId}">Where</label><select id="${slotId}" name="add_slot">!${slots.map((s) => html`<option value="${s.value}"!${s.value === chosen ? ' selected' : ''}>${s.label}</option>`).join('')}</select></div>
      <button type="submit" name="action" value="add" formaction="#flow">Add step</button>
    </div>
  </section>`;
}

function problemList(problems: readonly Problem[]): string {
  const anchor = (path: string) => {
    const step = /^steps\.(\d+)/.exec(path)?.[1];
    if (step !== undefined) return `#step-${step}`;
    return /^(trigger|reentry|goal|timezone)/.test(path) ? '#trigger' : '#flow';
  };
  return html`<section class="error" id="problems" role="alert" aria-labelledby="problems-title"><h2 id="problems-title">${problems.length === 1 ? '1 problem' : `${problems.length} problems`}</h2>
    <ul>!${problems.map((p) => html`<li><a href="${anchor(p.path)}"><code>${p.path}</code></a> ${p.message}</li>`).join('')}</ul></section>`;
}

/** The definition editor: name, description, the builder and the JSON view, and the form's buttons. */
export function definitionEditor(model: EditorModel, action: string, buttons: string): string {
  let n = 0;
  const definition = model.definition;
  const stepIds: string[] = [];
  const sendSteps: string[] = [];
  if (builderFits(definition)) {
    for (const step of definition.steps) {
      if (!isObj(step) || typeof step.id !== 'string') continue;
      stepIds.push(step.id);
      if (step.type === 'send_email') sendSteps.push(step.id);
    }
  }
  const r: Render = { choices: model.choices, stepIds, sendSteps, problems: model.problems ?? [], nextId: () => `f${++n}` };
  const builder = builderFits(definition)
    ? triggerCard(r, definition) + stepsSection(r, definition, model.slot)
    : html`<p class="hint">The builder cannot show this definition (it is not an object with a list of steps and the format’s keys only): edit it in the JSON view.</p>`;
  const domains =
    model.choices.domains.length === 0
      ? 'This workspace has no verified sending domain yet: a send step needs one.'
      : `Verified sending domains: ${model.choices.domains.join(', ')}.`;
  const outcome = model.problems?.length
    ? problemList(model.problems)
    : model.valid
      ? html`<p class="notice" id="problems" role="status">The definition is valid.</p>`
      : '';
  return html`!${outcome}
<form method="post" action="${action}" class="editor" data-builder>
  !${csrfField(model.signedIn.csrfToken)}
  <button type="submit" name="action" value="refresh" class="visually-hidden" tabindex="-1" aria-hidden="true">Update</button>
  <div class="card details">
    <label for="automation-name">Name</label>
    <input id="automation-name" name="name" required maxlength="120" value="${model.name}" autocomplete="off">
    <label for="automation-description">Description</label>
    <textarea id="automation-description" name="description" rows="2" maxlength="2000">${model.description}</textarea>
  </div>
  <div class="views">
    <section class="builder" aria-labelledby="builder-title">
      <h2 id="builder-title">Builder</h2>
      <p class="hint">${domains}</p>
      <fieldset class="builder-fields" data-builder-fields>!${builder}</fieldset>
    </section>
    <section class="json-view" aria-labelledby="json-title">
      <h2 id="json-title">JSON</h2>
      <label for="definition">Definition (JSON)</label>
      <textarea id="definition" name="definition" rows="30" spellcheck="false" aria-describedby="definition-hint">${model.json}</textarea>
      <input type="hidden" name="base" value="${model.base}">
      <p class="hint" id="definition-hint">The same definition as the builder. When you change it here, this JSON is what is checked and published; “Show in the builder” draws the builder from it.</p>
      <p class="hint sync" data-sync-status aria-live="polite"></p>
      <button type="submit" name="action" value="refresh" class="secondary">Show in the builder</button>
    </section>
  </div>
  <div class="editor-actions">!${buttons}</div>
</form>
<script src="/dashboard/assets/automation-builder.js" defer></script>`;
}
