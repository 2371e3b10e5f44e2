import { html } from 'ghtml';
import type { Automation, AutomationStats } from '../../../db/entities/index.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { definitionEditor, type EditorModel } from './dashboard-automation-editor.pages.ts';
import { olderLink } from './dashboard-webhooks.pages.ts';
import { csrfField, layout, message, when } from './dashboard.pages.ts';

/**
 * The automations pages: the list with each automation's counters; the new-automation page and
 * an automation's page (its summary, counters and lifecycle buttons), both with the definition
 * editor (dashboard-automation-editor.pages.ts); archiving's confirmation. An automation's runs
 * and a run's timeline are in dashboard-automation-runs.pages.ts. Every `${}` is escaped.
 */

export const BASE = '/dashboard/automations';

const STAT_TILES: readonly [keyof AutomationStats, string][] = [
  ['totalRuns', 'Total runs'],
  ['activeRuns', 'Active runs'],
  ['completedRuns', 'Completed'],
  ['failedRuns', 'Failed'],
  ['emailsSent', 'Emails sent'],
  ['creditsUsed', 'Credits used'],
];

export const count = (n: number) => n.toLocaleString('en-US');
export const stateBadge = (state: string) => html`<span class="state ${state}">${state}</span>`;
export const triggerText = (automation: Automation) =>
  automation.triggerKey ? `${automation.triggerType}: ${automation.triggerKey}` : automation.triggerType;

/** The six counters as tiles. */
export const counterTiles = (stats: AutomationStats) =>
  html`<ul class="tiles" aria-label="Counters">!${STAT_TILES.map(([key, label]) => html`<li class="card"><span class="tile-label">${label}</span> <strong>${count(stats[key])}</strong></li>`).join('')}</ul>`;

/* The list. */

export interface AutomationsPageModel {
  signedIn: SignedIn;
  automations: readonly Automation[];
  stats: ReadonlyMap<string, AutomationStats>;
  older?: string | undefined;
}

export function automationsPage(model: AutomationsPageModel): string {
  const rows = model.automations.map((automation) => {
    const stats = model.stats.get(automation.id);
    return html`<tr>
      <th scope="row" data-label="Name"><a href="${BASE}/${automation.id}">${automation.name}</a></th>
      <td data-label="Status">!${stateBadge(automation.status)}</td>
      <td data-label="Trigger"><code>${triggerText(automation)}</code></td>
      <td data-label="Version">${String(automation.version)}</td>
      !${STAT_TILES.map(([key, label]) => html`<td data-label="${label}" class="number">${count(stats?.[key] ?? 0)}</td>`).join('')}
    </tr>`;
  });
  return layout(
    'Automations',
    html`<p><a class="button" href="${BASE}/new">New automation</a></p>
<section aria-labelledby="automations-title">
  <h2 id="automations-title">Automations of ${model.signedIn.orgName}</h2>
  !${
    model.automations.length === 0
      ? html`<div class="empty"><p><strong>No automations yet.</strong> An automation sends emails, waits and branches for each contact its trigger enrols. <a href="${BASE}/new">Create your first automation</a>.</p></div>`
      : html`<table class="keys cards automations"><thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Trigger</th><th scope="col">Version</th>!${STAT_TILES.map(([, label]) => html`<th scope="col" class="number">${label}</th>`).join('')}</tr></thead>
      <tbody>!${rows.join('')}</tbody></table>`
  }
  !${model.older ? olderLink(BASE, { older: model.older }, 'Older automations') : ''}
</section>`,
    model.signedIn,
    'automations',
  );
}

export function newAutomationPage(model: EditorModel): string {
  return layout(
    'New automation',
    html`!${message(model.error)}!${message(model.notice, 'notice')}
<p class="hint">An automation is saved with its definition, checked as a whole: “Create” publishes it as version 1, as a draft. Activate it afterwards, on its page.</p>
!${definitionEditor(
      model,
      `${BASE}/new`,
      html`<button type="submit" name="action" value="validate" class="secondary" formaction="#problems">Validate</button> <button type="submit" name="action" value="publish">Create and publish</button>`,
    )}
<p><a href="${BASE}">All automations</a></p>`,
    model.signedIn,
    'automations',
  );
}

export interface AutomationPageModel extends EditorModel {
  automation: Automation;
  stats: AutomationStats;
  /** The published definition's version; null when none is. */
  publishedVersion: number | null;
}

/** Only owners switch an automation on: an active automation sends email. */
export const OWNER_ONLY_NOTE =
  'Only an owner can activate or resume an automation, or publish to an active one: an active automation sends email.';

function lifecycle(model: AutomationPageModel): string {
  const { automation, signedIn } = model;
  const owner = signedIn.role === 'owner';
  const to = (status: 'active' | 'paused', label: string, hint: string) =>
    html`<form method="post" action="${BASE}/${automation.id}/status" class="inline-form">!${csrfField(signedIn.csrfToken)}<input type="hidden" name="to" value="${status}"><button type="submit">${label}</button> <span class="hint">${hint}</span></form>`;
  if (automation.status === 'archived') return html`<p class="hint">Archived: it enrols no one and cannot be edited.</p>`;
  const buttons: string[] = [];
  if (automation.status === 'draft' && owner) buttons.push(to('active', 'Activate', 'Contacts that match the trigger enter from now on.'));
  if (automation.status === 'paused' && owner) buttons.push(to('active', 'Resume', 'Runs go on and contacts enter again.'));
  if (automation.status === 'active') buttons.push(to('paused', 'Pause', 'No one enters and runs wait until it is resumed.'));
  if (!owner && automation.status !== 'active') buttons.push(html`<p class="hint">${OWNER_ONLY_NOTE}</p>`);
  buttons.push(
    html`<form method="get" action="${BASE}/${automation.id}/archive" class="inline-form"><button type="submit" class="danger">Archive…</button></form>`,
  );
  return html`<div class="lifecycle">!${buttons.join('')}</div>`;
}

export function automationPage(model: AutomationPageModel): string {
  const { automation } = model;
  const editable = automation.status !== 'archived';
  const publishLabel = `Publish as version ${automation.version + 1}`;
  const buttons = editable
    ? html`<button type="submit" name="action" value="validate" class="secondary" formaction="#problems">Validate</button> <button type="submit" name="action" value="publish">${publishLabel}</button> <button type="submit" name="action" value="details" class="secondary">Save name and description</button>!${automation.status === 'active' && model.signedIn.role !== 'owner' ? html`<p class="hint">${OWNER_ONLY_NOTE}</p>` : ''}`
    : html`<button type="submit" name="action" value="validate" class="secondary" formaction="#problems">Validate</button> <span class="hint">An archived automation cannot be edited.</span>`;
  return layout(
    automation.name,
    html`!${message(model.error)}!${message(model.notice, 'notice')}
<section class="card" aria-labelledby="summary-title">
  <h2 id="summary-title">Summary</h2>
  <dl class="facts">
    <dt>Status</dt><dd>!${stateBadge(automation.status)}</dd>
    <dt>Trigger</dt><dd><code>${triggerText(automation)}</code></dd>
    <dt>Version</dt><dd>${String(automation.version)}</dd>
    <dt>Definition</dt><dd>${model.publishedVersion === null ? 'none published yet' : `published at version ${model.publishedVersion}`}</dd>
    !${automation.description ? html`<dt>Description</dt><dd>${automation.description}</dd>` : ''}
    <dt>Created</dt><dd>!${when(automation.createdAt)}</dd>
    <dt>Changed</dt><dd>!${when(automation.updatedAt)}</dd>
  </dl>
  !${lifecycle(model)}
  <p><a href="${BASE}/${automation.id}/runs">Runs</a> · <a href="${BASE}">All automations</a></p>
</section>
!${counterTiles(model.stats)}
<h2>Definition</h2>
!${definitionEditor(model, `${BASE}/${automation.id}`, buttons)}`,
    model.signedIn,
    'automations',
  );
}

/** Archiving asks first (without JavaScript too): it ends the open runs. */
export function archivePage(model: { signedIn: SignedIn; automation: Automation; openRuns: number }): string {
  const { automation, signedIn } = model;
  const runs = model.openRuns === 1 ? '1 open run' : `${count(model.openRuns)} open runs`;
  return layout(
    `Archive ${automation.name}?`,
    html`<section class="card narrow-wide">
  <p>Archiving stops the automation for good: no contact enters it any more, and its ${runs} end where they are. An archived automation cannot be edited.</p>
  <form method="post" action="${BASE}/${automation.id}/archive">
    !${csrfField(signedIn.csrfToken)}
    <button type="submit" class="danger large">Archive and end ${runs}</button>
  </form>
  <p><a href="${BASE}/${automation.id}">Keep it</a></p>
</section>`,
    signedIn,
    'automations',
  );
}
