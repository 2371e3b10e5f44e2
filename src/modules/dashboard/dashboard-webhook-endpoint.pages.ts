import { html } from 'ghtml';
import {
  WEBHOOK_DELIVERY_STATUSES,
  type WebhookDelivery,
  type WebhookDeliveryStatus,
  type WebhookEndpoint,
} from '../../../db/entities/index.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { breakable } from './dashboard-inbox.pages.ts';
import { csrfField, layout, message, when } from './dashboard.pages.ts';
import { BASE, endpointState, eventsSummary, olderLink, stateBadge } from './dashboard-webhooks.pages.ts';

/**
 * One endpoint's page: what it is, its actions (edit, disable or enable, a test event, delete),
 * its delivery log (status filter, newest first) and its secret rotation.
 */

/** The overlap choices of a rotation (seconds), the API's default (24 h) first. */
export const ROTATION_CHOICES = [
  [86_400, '24 hours'],
  [3_600, '1 hour'],
  [604_800, '7 days'],
  [0, 'No overlap'],
] as const;

export interface EndpointPageModel {
  signedIn: SignedIn;
  endpoint: WebhookEndpoint;
  deliveries: readonly WebhookDelivery[];
  status?: WebhookDeliveryStatus | undefined;
  older?: string | undefined;
  /** A secret just made by a rotation: shown this once. */
  rotated?: { secret: string; previousExpiresAt: Date | null };
  /** The secret of the endpoint just created: shown this once. */
  created?: string;
  error?: string;
  notice?: string;
}

/** The secret shown once, after creation or a rotation. */
function secretCard(title: string, secret: string, after: string): string {
  return html`<section class="card secret" aria-labelledby="secret-title">
    <h2 id="secret-title">${title}</h2>
    <p>Copy it now and give it to the receiver: Herald keeps it only sealed, and it is shown this once.</p>
    <div class="copy-row"><code id="new-secret">${secret}</code><button type="button" data-copy="new-secret">Copy</button></div>
    !${after}
  </section>`;
}

/** Edit, test, disable or enable, delete: each a link or a one-button form. */
function actions(endpoint: WebhookEndpoint, csrf: string): string {
  const toggle = endpoint.enabled
    ? html`<form method="post" action="${BASE}/${endpoint.id}/disable" class="inline-form">!${csrfField(csrf)}<button type="submit" class="secondary">Disable</button></form>`
    : html`<form method="post" action="${BASE}/${endpoint.id}/enable" class="inline-form">!${csrfField(csrf)}<button type="submit" class="secondary">Enable</button></form>`;
  return html`<div class="lifecycle">
    <a href="${BASE}/${endpoint.id}/edit">Edit</a>
    !${endpoint.enabled ? html`<form method="post" action="${BASE}/${endpoint.id}/test" class="inline-form">!${csrfField(csrf)}<button type="submit">Send a test event</button></form>` : ''}
    !${toggle}
    <a href="${BASE}/${endpoint.id}/delete" class="danger-link">Delete…</a>
  </div>
  <p class="hint">!${endpoint.enabled ? 'A test event (webhook.test) goes to this endpoint alone, signed and retried like any event; its page shows the response.' : 'A disabled endpoint receives nothing: enable it to send it events again.'}</p>`;
}

function deliveryRow(delivery: WebhookDelivery): string {
  return html`<tr>
    <th scope="row" data-label="Event"><a href="${BASE}/deliveries/${delivery.id}">${delivery.eventType}</a></th>
    <td data-label="Status">!${stateBadge(delivery.status)}</td>
    <td data-label="Attempts">${String(delivery.attemptCount)}</td>
    <td data-label="Last response">${delivery.lastResponseStatus === null || delivery.lastResponseStatus === undefined ? '—' : String(delivery.lastResponseStatus)}</td>
    <td data-label="Created">!${when(delivery.createdAt)}</td>
  </tr>`;
}

export function endpointPage(model: EndpointPageModel): string {
  const { endpoint, signedIn } = model;
  const rotated = model.rotated
    ? secretCard(
        'The new signing secret',
        model.rotated.secret,
        html`<p class="hint">!${
          model.rotated.previousExpiresAt
            ? html`Until !${when(model.rotated.previousExpiresAt)} every attempt is also signed with the replaced secret.`
            : html`The replaced secret no longer signs.`
        }</p>`,
      )
    : model.created
      ? secretCard(
          'Its signing secret',
          model.created,
          html`<p class="hint">Verify the <code>Herald-Signature</code> header of every request with it.</p>`,
        )
      : '';
  const filter = html`<form method="get" action="${BASE}/${endpoint.id}" class="card filters" role="search" aria-label="Filter the deliveries">
    <div><label for="status">Status</label>
      <select id="status" name="status">
        <option value="">Any</option>
        !${WEBHOOK_DELIVERY_STATUSES.map((status) => html`<option value="${status}"!${model.status === status ? ' selected' : ''}>${status}</option>`).join('')}
      </select></div>
    <div class="filter-actions"><button type="submit">Filter</button>!${model.status ? html` <a href="${BASE}/${endpoint.id}">Clear</a>` : ''}</div>
  </form>`;
  return layout(
    endpoint.name,
    html`!${rotated}!${message(model.error)}!${message(model.notice, 'notice')}
<section aria-labelledby="endpoint-title" class="card">
  <h2 id="endpoint-title">Endpoint</h2>
  <dl class="facts">
    <dt>URL</dt><dd><code>!${breakable(endpoint.url)}</code></dd>
    <dt>Events</dt><dd>${eventsSummary(endpoint.events)}</dd>
    <dt>State</dt><dd>!${stateBadge(endpointState(endpoint))}!${endpoint.disabledReason ? html` ${endpoint.disabledReason}` : ''}</dd>
    !${endpoint.description ? html`<dt>Description</dt><dd>${endpoint.description}</dd>` : ''}
    <dt>Created</dt><dd>!${when(endpoint.createdAt)}</dd>
  </dl>
  !${actions(endpoint, signedIn.csrfToken)}
  <p><a href="${BASE}">All endpoints</a></p>
</section>
<section aria-labelledby="deliveries-title">
  <h2 id="deliveries-title">Delivery log</h2>
  !${filter}
  !${
    model.deliveries.length === 0
      ? html`<p>No deliveries${model.status ? ` with status ${model.status}` : ''}.!${model.status ? '' : html` Events the endpoint subscribed to appear here as they happen; send a test event to see one now.`}</p>`
      : html`<table class="keys cards"><caption class="visually-hidden">Deliveries, newest first</caption><thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last response</th><th scope="col">Created</th></tr></thead>
      <tbody>!${model.deliveries.map(deliveryRow).join('')}</tbody></table>`
  }
  !${model.older ? olderLink(`${BASE}/${endpoint.id}`, { status: model.status, older: model.older }, 'Older deliveries') : ''}
</section>
<section aria-labelledby="rotate-title" class="card">
  <h2 id="rotate-title">Rotate the signing secret</h2>
  <form method="post" action="${BASE}/${endpoint.id}/rotate-secret" data-confirm="Rotate the signing secret of ${endpoint.name}? The new secret is shown once.">
    !${csrfField(signedIn.csrfToken)}
    <label for="overlap">Keep signing with the old secret too for</label>
    <select id="overlap" name="overlap_seconds">
      !${ROTATION_CHOICES.map(([seconds, label]) => html`<option value="${String(seconds)}">${label}</option>`).join('')}
    </select>
    <p class="hint">While the old secret still signs, every attempt carries both signatures, so the receiver can switch without refusing deliveries. With no overlap the old secret stops signing at once.</p>
    <button type="submit" class="danger">Rotate secret</button>
  </form>
</section>`,
    signedIn,
    'webhooks',
  );
}
