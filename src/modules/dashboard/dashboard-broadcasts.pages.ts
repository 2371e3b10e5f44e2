import { html } from 'ghtml';
import type { Broadcast, Segment } from '../../../db/entities/index.ts';
import type { BroadcastMetrics } from '../broadcasts/broadcasts.fns.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { stateBadge } from './dashboard-templates.pages.ts';
import { olderLink } from './dashboard-webhooks.pages.ts';
import { csrfField, layout, message, when } from './dashboard.pages.ts';

/**
 * The broadcasts list and a broadcast's page: its status and counters (queued, sent, delivered,
 * opened, clicked, bounced, complained, unsubscribed) as tiles, a uPlot bar chart
 * (assets/broadcast-chart.js) and a table; the page reloads itself while the broadcast is
 * scheduled or sending (a `Refresh` header, set by the route). Every `${}` is escaped.
 */

export const BROADCASTS = '/dashboard/broadcasts';
const count = (n: number) => n.toLocaleString('en-US');

/** The counters in the order a campaign's funnel reads. */
export const FUNNEL = [
  ['recipients', 'Queued'],
  ['sent', 'Sent'],
  ['delivered', 'Delivered'],
  ['opened', 'Opened'],
  ['clicked', 'Clicked'],
  ['bounced', 'Bounced'],
  ['complained', 'Complained'],
  ['unsubscribed', 'Unsubscribed'],
] as const;

export interface BroadcastsPageModel {
  signedIn: SignedIn;
  broadcasts: readonly { broadcast: Broadcast; metrics: BroadcastMetrics }[];
  older?: string | undefined;
  notice?: string | undefined;
}

export function broadcastsPage(model: BroadcastsPageModel): string {
  const rows = model.broadcasts.map(
    ({ broadcast: b, metrics: m }) => html`<tr>
      <th scope="row" data-label="Name"><a href="${BROADCASTS}/${b.id}">${b.name}</a></th>
      <td data-label="Subject">${b.subject}</td>
      <td data-label="Status">!${stateBadge(b.status)}!${b.sandbox ? html` <span class="hint">(sandbox)</span>` : ''}</td>
      <td data-label="Queued" class="number">${count(m.recipients)}</td>
      <td data-label="Delivered" class="number">${count(m.delivered)}</td>
      <td data-label="Opened" class="number">${count(m.opened)}</td>
      <td data-label="When">!${when(b.completedAt ?? b.sendingAt ?? b.scheduledAt ?? b.createdAt)}</td>
    </tr>`,
  );
  return layout(
    'Broadcasts',
    html`!${message(model.notice, 'notice')}<p class="editor-actions"><a class="button" href="${BROADCASTS}/new">New broadcast</a></p>
<section aria-labelledby="broadcasts-title">
  <h2 id="broadcasts-title">Broadcasts of ${model.signedIn.orgName}</h2>
  !${
    rows.length === 0
      ? html`<div class="card empty"><p><strong>No broadcasts yet.</strong> A broadcast sends one message to every active contact of the segments you pick, with an unsubscribe link in each.</p>
      <p><a class="button" href="${BROADCASTS}/new">Compose your first broadcast</a> <a href="/dashboard/templates">or start from a template</a></p></div>`
      : html`<table class="keys cards"><thead><tr><th scope="col">Name</th><th scope="col">Subject</th><th scope="col">Status</th><th scope="col" class="number">Queued</th><th scope="col" class="number">Delivered</th><th scope="col" class="number">Opened</th><th scope="col">When</th></tr></thead>
      <tbody>!${rows.join('')}</tbody></table>`
  }
  !${model.older ? olderLink(BROADCASTS, { older: model.older }, 'Older broadcasts') : ''}
</section>`,
    model.signedIn,
    'broadcasts',
  );
}

export interface BroadcastPageModel {
  signedIn: SignedIn;
  broadcast: Broadcast;
  metrics: BroadcastMetrics;
  segments: readonly Segment[];
  error?: string | undefined;
  notice?: string | undefined;
}

const live = (b: Broadcast) => b.status === 'scheduled' || b.status === 'sending';

function actions(model: BroadcastPageModel): string {
  const { broadcast: b, signedIn } = model;
  if (b.status === 'draft')
    return html`<div class="editor-actions"><a class="button" href="${BROADCASTS}/${b.id}/launch">Review and send…</a> <a class="button secondary" href="${BROADCASTS}/${b.id}/edit">Edit draft</a>
    <form method="post" action="${BROADCASTS}/${b.id}/delete" class="inline-form" data-confirm="Delete the draft ${b.name}? This cannot be undone.">
    !${csrfField(signedIn.csrfToken)}<button type="submit" class="danger">Delete draft</button></form></div>`;
  const locked = html`<p class="hint" id="not-editable">This broadcast was launched, so it can no longer be edited or deleted: its messages are written from it and its counters refer to it. Create a new broadcast to send something else.</p>`;
  if (!live(b)) return locked;
  return html`!${locked}<form method="post" action="${BROADCASTS}/${b.id}/cancel" class="inline-form" data-confirm="Cancel ${b.name}? Messages not yet handed off are not sent.">
    !${csrfField(signedIn.csrfToken)}<button type="submit" class="danger large">Cancel broadcast</button></form>`;
}

export function broadcastPage(model: BroadcastPageModel): string {
  const { broadcast: b, metrics } = model;
  const series = { labels: FUNNEL.map(([, label]) => label), values: FUNNEL.map(([key]) => metrics[key]) };
  return layout(
    b.name,
    html`!${message(model.error)}!${message(model.notice, 'notice')}
<p><a href="${BROADCASTS}">All broadcasts</a></p>
<section class="card" aria-labelledby="status-title">
  <h2 id="status-title">Status: !${stateBadge(b.status)}!${b.sandbox ? html` <span class="hint">(sandbox: sent as with a test key)</span>` : ''}</h2>
  !${live(b) ? html`<p class="hint" role="status">This page reloads every 5 seconds while the broadcast is ${b.status}.</p>` : ''}
  <dl class="facts">
    <dt>Subject</dt><dd>${b.subject}</dd>
    <dt>From</dt><dd>${b.fromName} &lt;${b.fromEmail}&gt;</dd>
    <dt>Segments</dt><dd>${model.segments.map((s) => s.name).join(', ') || b.segmentIds.join(', ')}</dd>
    <dt>Stream</dt><dd>${b.stream}</dd>
    !${b.status !== 'draft' ? html`<dt>Tracking</dt><dd>${b.trackOpens ? 'opens' : 'no opens'}, ${b.trackClicks ? 'clicks' : 'no clicks'}</dd>` : ''}
    !${b.scheduledAt ? html`<dt>Scheduled for</dt><dd>!${when(b.scheduledAt)}</dd>` : ''}
    !${b.sendingAt ? html`<dt>Sending since</dt><dd>!${when(b.sendingAt)}</dd>` : ''}
    !${b.completedAt ? html`<dt>Finished</dt><dd>!${when(b.completedAt)}</dd>` : ''}
    !${b.cancelledAt ? html`<dt>Cancelled</dt><dd>!${when(b.cancelledAt)}</dd>` : ''}
    !${b.failureReason ? html`<dt>Why it failed</dt><dd>${b.failureReason}</dd>` : ''}
    <dt>Created</dt><dd>!${when(b.createdAt)}</dd>
  </dl>
  !${actions(model)}
</section>
<ul class="tiles" aria-label="Counters">!${FUNNEL.map(([key, label]) => html`<li class="card"><span class="tile-label">${label}</span> <strong data-counter="${key}">${count(metrics[key])}</strong></li>`).join('')}</ul>
<section aria-labelledby="chart-title" class="card">
  <h2 id="chart-title">Where the messages are</h2>
  <div class="chart" data-chart="funnel" data-series="${JSON.stringify(series)}" role="img" aria-label="Bar chart of the counters above"></div>
</section>
<details class="card"><summary>Content</summary>
  !${b.previewText ? html`<p><strong>Preheader:</strong> ${b.previewText}</p>` : ''}
  !${b.html ? html`<iframe class="message-html" sandbox referrerpolicy="no-referrer" title="HTML body of the broadcast (not personalised)" srcdoc="${b.html}"></iframe>` : ''}
  !${b.plainText ? html`<pre class="message-text">${b.plainText}</pre>` : ''}
</details>
<script src="/dashboard/assets/uplot.js" defer></script>
<script src="/dashboard/assets/broadcast-chart.js" defer></script>`,
    model.signedIn,
    'broadcasts',
  );
}
