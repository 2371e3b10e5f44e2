import { html } from 'ghtml';
import {
  AUTOMATION_RUN_STATUSES,
  type Automation,
  type AutomationRun,
  type AutomationRunStatus,
  type AutomationRunStep,
  type AutomationStats,
} from '../../../db/entities/index.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { BASE, counterTiles, stateBadge } from './dashboard-automations.pages.ts';
import { breakable } from './dashboard-inbox.pages.ts';
import { olderLink } from './dashboard-webhooks.pages.ts';
import { layout, when } from './dashboard.pages.ts';

/**
 * An automation's runs (newest first, a status filter, keyset pages) and one run's timeline
 * (its steps in the order they happened). Every `${}` is escaped: errors and details are the
 * engine's, addresses the workspace's contacts'.
 */

export interface RunsPageModel {
  signedIn: SignedIn;
  automation: Automation;
  stats: AutomationStats;
  runs: readonly AutomationRun[];
  contacts: ReadonlyMap<string, string>;
  versions: ReadonlyMap<string, number>;
  status?: AutomationRunStatus | undefined;
  older?: string | undefined;
}

const contactCell = (contacts: ReadonlyMap<string, string>, id: string) => {
  const email = contacts.get(id);
  return email ? html`${email}` : html`<code>${id}</code> <span class="hint">(deleted)</span>`;
};

function runRow(model: RunsPageModel, run: AutomationRun): string {
  const where = run.status === 'active' ? (run.waitingFor ? `waiting for ${run.waitingFor}` : run.dueAt ? 'due' : '') : '';
  const email = model.contacts.get(run.contactId);
  return html`<tr>
    <th scope="row" data-label="Contact"><a href="${BASE}/${model.automation.id}/runs/${run.id}" title="Run ${run.id}">!${email ? html`${email}` : html`deleted contact <code>${run.contactId}</code>`}</a></th>
    <td data-label="Status">!${stateBadge(run.status)}</td>
    <td data-label="Step">!${run.stepId ? html`<code>${run.stepId}</code>` : '—'}!${where ? html` <span class="hint">${where}</span>` : ''}</td>
    <td data-label="Version">${model.versions.has(run.definitionId) ? String(model.versions.get(run.definitionId)) : '—'}</td>
    <td data-label="Started">!${when(run.createdAt)}</td>
    <td data-label="Ended">!${when(run.endedAt)}</td>
    <td data-label="Outcome">!${run.error ? html`<span class="error-text">!${breakable(run.error)}</span>` : run.exitReason ? html`${run.exitReason}` : '—'}</td>
  </tr>`;
}

export function runsPage(model: RunsPageModel): string {
  const { automation } = model;
  const path = `${BASE}/${automation.id}/runs`;
  const filter = html`<form method="get" action="${path}" class="card filters" role="search" aria-label="Filter the runs">
    <div><label for="status">Status</label>
      <select id="status" name="status">
        <option value="">Any</option>
        !${AUTOMATION_RUN_STATUSES.map((status) => html`<option value="${status}"!${model.status === status ? ' selected' : ''}>${status}</option>`).join('')}
      </select></div>
    <div class="filter-actions"><button type="submit">Filter</button>!${model.status ? html` <a href="${path}">Clear</a>` : ''}</div>
  </form>`;
  return layout(
    `Runs of ${automation.name}`,
    html`<p><a href="${BASE}/${automation.id}">← ${automation.name}</a> !${stateBadge(automation.status)}</p>
!${counterTiles(model.stats)}
!${filter}
!${
      model.runs.length === 0
        ? html`<p>No runs${model.status ? ` with status ${model.status}` : ' yet'}.!${model.status ? '' : ' Runs start once the automation is active and its trigger happens to a contact.'}</p>`
        : html`<table class="keys cards runs"><caption class="visually-hidden">Runs, newest first</caption><thead><tr><th scope="col">Contact</th><th scope="col">Status</th><th scope="col">Step</th><th scope="col">Version</th><th scope="col">Started</th><th scope="col">Ended</th><th scope="col">Outcome</th></tr></thead>
  <tbody>!${model.runs.map((run) => runRow(model, run)).join('')}</tbody></table>`
    }
!${model.older ? olderLink(path, { status: model.status, older: model.older }, 'Older runs') : ''}`,
    model.signedIn,
    'automations',
  );
}

export interface RunPageModel {
  signedIn: SignedIn;
  automation: Automation;
  run: AutomationRun;
  steps: readonly AutomationRunStep[];
  contactEmail: string | undefined;
  version: number | undefined;
}

/** An instant to the second (a run's steps are often seconds apart), in a <time> element; a dash for none. */
const instant = (date: Date | null | undefined) =>
  date ? html`<time datetime="${date.toISOString()}">${date.toISOString().slice(0, 19).replace('T', ' ')} UTC</time>` : '—';

/** A timeline entry's detail: `key: value` pairs, values as JSON; the email a step sent links to its page. */
function detailText(detail: Record<string, unknown>): string {
  const entries = Object.entries(detail ?? {});
  if (entries.length === 0) return '—';
  const value = (key: string, item: unknown) => {
    const shown = html`<code>!${breakable(typeof item === 'string' ? item : JSON.stringify(item))}</code>`;
    return key === 'email_id' && typeof item === 'string' && /^[0-9a-f]{24}$/.test(item)
      ? html`<a href="/dashboard/emails/${item}">!${shown}</a>`
      : shown;
  };
  return html`<dl class="detail">!${entries.map(([key, item]) => html`<dt>${key}</dt><dd>!${value(key, item)}</dd>`).join('')}</dl>`;
}

export function runPage(model: RunPageModel): string {
  const { automation, run } = model;
  const rows = model.steps.map(
    (step, i) => html`<tr>
      <td data-label="#" class="number">${String(i + 1)}</td>
      <td data-label="Time">!${instant(step.createdAt)}</td>
      <th scope="row" data-label="Step"><code>${step.stepId}</code></th>
      <td data-label="Kind">${step.kind}</td>
      <td data-label="Outcome"><span class="outcome ${step.outcome}">${step.outcome}</span></td>
      <td data-label="Detail">!${detailText(step.detail)}</td>
    </tr>`,
  );
  return layout(
    `Run of ${automation.name}`,
    html`<p><a href="${BASE}/${automation.id}/runs">← Runs of ${automation.name}</a></p>
<section class="card" aria-labelledby="run-title">
  <h2 id="run-title">Run <code>${run.id}</code></h2>
  <dl class="facts">
    <dt>Contact</dt><dd>!${model.contactEmail ? html`${model.contactEmail} <code>${run.contactId}</code>` : contactCell(new Map(), run.contactId)}</dd>
    <dt>Status</dt><dd>!${stateBadge(run.status)}</dd>
    <dt>Definition</dt><dd>${model.version === undefined ? '—' : `version ${model.version}`}</dd>
    <dt>Current step</dt><dd>!${run.stepId ? html`<code>${run.stepId}</code>` : '—'}</dd>
    !${run.waitingFor ? html`<dt>Waiting for</dt><dd><code>${run.waitingFor}</code></dd>` : ''}
    !${run.status === 'active' && run.dueAt ? html`<dt>Next looked at</dt><dd>!${instant(run.dueAt)}</dd>` : ''}
    !${run.exitReason ? html`<dt>Exit reason</dt><dd>${run.exitReason}</dd>` : ''}
    !${run.error ? html`<dt>Error</dt><dd>!${breakable(run.error)}</dd>` : ''}
    <dt>Started</dt><dd>!${instant(run.createdAt)}</dd>
    <dt>Ended</dt><dd>!${instant(run.endedAt)}</dd>
  </dl>
</section>
<section aria-labelledby="timeline-title">
  <h2 id="timeline-title">Timeline</h2>
  !${
    rows.length === 0
      ? html`<p>Nothing happened yet.</p>`
      : html`<table class="keys cards timeline"><caption class="visually-hidden">Steps of the run, in order</caption><thead><tr><th scope="col" class="number">#</th><th scope="col">Time</th><th scope="col">Step</th><th scope="col">Kind</th><th scope="col">Outcome</th><th scope="col">Detail</th></tr></thead>
      <tbody>!${rows.join('')}</tbody></table>`
  }
</section>`,
    model.signedIn,
    'automations',
  );
}
