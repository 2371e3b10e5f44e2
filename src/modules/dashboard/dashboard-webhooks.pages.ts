import { html } from 'ghtml';
import {
  WEBHOOK_DELIVERY_STATUSES,
  type WebhookAttempt,
  type WebhookDelivery,
  type WebhookDeliveryStatus,
  type WebhookEndpoint,
} from '../../../db/entities/index.ts';
import { ATTEMPTS_PER_DELIVERY } from '../webhooks/deliveries.repo.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { breakable } from './dashboard-inbox.pages.ts';
import { csrfField, layout, message, when } from './dashboard.pages.ts';

/**
 * The webhooks pages: the workspace's endpoints, one endpoint with its delivery log (status
 * filter, newest first) and secret rotation, one delivery with its attempts and a replay button.
 * Every `${}` is escaped (URLs, names, response bodies are the receivers' or the API callers').
 */

const BASE = '/dashboard/webhooks';

/** The overlap choices of a rotation (seconds), the API's default (24 h) first. */
export const ROTATION_CHOICES = [
  [86_400, '24 hours'],
  [3_600, '1 hour'],
  [604_800, '7 days'],
  [0, 'No overlap'],
] as const;

const endpointState = (endpoint: WebhookEndpoint) => (endpoint.enabled ? 'enabled' : 'disabled');
const stateBadge = (state: string) => html`<span class="state ${state}">${state}</span>`;
const events = (list: readonly string[]) => (list.includes('*') ? 'every event' : list.join(', '));

/** A link to the next (older) page, keeping the other query parameters. */
export function olderLink(path: string, params: Record<string, string | undefined>, label: string): string {
  const query = new URLSearchParams(
    Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''),
  );
  return html`<nav class="pager" aria-label="Pages"><a href="${path}?${query.toString()}" rel="next">${label}</a></nav>`;
}

export interface WebhooksPageModel {
  signedIn: SignedIn;
  endpoints: readonly WebhookEndpoint[];
  /** The query of the next page, when there is one. */
  older?: string | undefined;
}

export function webhooksPage(model: WebhooksPageModel): string {
  const rows = model.endpoints.map(
    (endpoint) => html`<tr>
      <th scope="row" data-label="Name"><a href="${BASE}/${endpoint.id}">${endpoint.name}</a></th>
      <td data-label="URL"><code>!${breakable(endpoint.url)}</code></td>
      <td data-label="Events">${events(endpoint.events)}</td>
      <td data-label="State">!${stateBadge(endpointState(endpoint))}</td>
      <td data-label="Created">!${when(endpoint.createdAt)}</td>
    </tr>`,
  );
  return layout(
    'Webhooks',
    html`<section aria-labelledby="endpoints-title">
  <h2 id="endpoints-title">Endpoints of ${model.signedIn.orgName}</h2>
  !${
    model.endpoints.length === 0
      ? html`<p>No endpoints yet.</p>`
      : html`<table class="keys cards"><thead><tr><th scope="col">Name</th><th scope="col">URL</th><th scope="col">Events</th><th scope="col">State</th><th scope="col">Created</th></tr></thead>
      <tbody>!${rows.join('')}</tbody></table>`
  }
  !${model.older ? olderLink(BASE, { older: model.older }, 'Older endpoints') : ''}
  <p class="hint">Endpoints are registered with the API (<code>POST /api/v1/webhooks</code>). Open one to see its delivery log, replay deliveries or rotate its signing secret.</p>
</section>`,
    model.signedIn,
    'webhooks',
  );
}

export interface EndpointPageModel {
  signedIn: SignedIn;
  endpoint: WebhookEndpoint;
  deliveries: readonly WebhookDelivery[];
  status?: WebhookDeliveryStatus | undefined;
  older?: string | undefined;
  /** A secret just made by a rotation: shown this once. */
  rotated?: { secret: string; previousExpiresAt: Date | null };
  error?: string;
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
    ? html`<section class="card secret" aria-labelledby="secret-title">
        <h2 id="secret-title">The new signing secret</h2>
        <p>Copy it now and give it to the receiver: Herald keeps it only sealed, and it is shown this once.</p>
        <div class="copy-row"><code id="new-secret">${model.rotated.secret}</code><button type="button" data-copy="new-secret">Copy</button></div>
        <p class="hint">!${
          model.rotated.previousExpiresAt
            ? html`Until !${when(model.rotated.previousExpiresAt)} every attempt is also signed with the replaced secret.`
            : html`The replaced secret no longer signs.`
        }</p>
      </section>`
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
    html`!${rotated}!${message(model.error)}
<section aria-labelledby="endpoint-title" class="card">
  <h2 id="endpoint-title">Endpoint</h2>
  <dl class="facts">
    <dt>URL</dt><dd><code>!${breakable(endpoint.url)}</code></dd>
    <dt>Events</dt><dd>${events(endpoint.events)}</dd>
    <dt>State</dt><dd>!${stateBadge(endpointState(endpoint))}!${endpoint.disabledReason ? html` ${endpoint.disabledReason}` : ''}</dd>
    !${endpoint.description ? html`<dt>Description</dt><dd>${endpoint.description}</dd>` : ''}
    <dt>Created</dt><dd>!${when(endpoint.createdAt)}</dd>
  </dl>
  <p><a href="${BASE}">All endpoints</a></p>
</section>
<section aria-labelledby="deliveries-title">
  <h2 id="deliveries-title">Delivery log</h2>
  !${filter}
  !${
    model.deliveries.length === 0
      ? html`<p>No deliveries${model.status ? ` with status ${model.status}` : ''}.</p>`
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

export interface DeliveryPageModel {
  signedIn: SignedIn;
  delivery: WebhookDelivery;
  attempts: readonly WebhookAttempt[];
  /** The endpoint, or null when it was deleted. */
  endpoint: WebhookEndpoint | null;
  error?: string;
  notice?: string;
}

function attemptRow(attempt: WebhookAttempt): string {
  return html`<tr>
    <th scope="row" data-label="Attempt">${attempt.series === 0 ? `#${attempt.attemptNumber}` : `Replay ${attempt.series}, #${attempt.attemptNumber}`}</th>
    <td data-label="Started">!${when(attempt.startedAt)}</td>
    <td data-label="Response">${attempt.statusCode === null || attempt.statusCode === undefined ? 'none' : String(attempt.statusCode)}</td>
    <td data-label="Latency">${attempt.latencyMs === null || attempt.latencyMs === undefined ? '—' : `${attempt.latencyMs} ms`}</td>
    <td data-label="Error"><span>!${breakable(attempt.error ?? '—')}</span></td>
    <td data-label="Response body">!${attempt.responseExcerpt ? html`<code>!${breakable(attempt.responseExcerpt)}</code>` : '—'}</td>
  </tr>`;
}

export function deliveryPage(model: DeliveryPageModel): string {
  const { delivery, endpoint, signedIn } = model;
  // Newest first, like the log.
  const attempts = [...model.attempts].reverse();
  return layout(
    `Delivery of ${delivery.eventType}`,
    html`!${message(model.error)}!${message(model.notice, 'notice')}
<section aria-labelledby="delivery-title" class="card">
  <h2 id="delivery-title">Delivery</h2>
  <dl class="facts">
    <dt>Endpoint</dt><dd>!${endpoint ? html`<a href="${BASE}/${endpoint.id}">${endpoint.name}</a> <code>!${breakable(endpoint.url)}</code>` : html`deleted (<code>${delivery.webhookId}</code>)`}</dd>
    <dt>Status</dt><dd>!${stateBadge(delivery.status)}</dd>
    <dt>Event</dt><dd><code>${delivery.eventType}</code> <code>${delivery.eventId}</code></dd>
    <dt>Delivery id</dt><dd><code>${delivery.id}</code></dd>
    <dt>Attempts</dt><dd>${String(delivery.attemptCount)}!${delivery.replayCount > 0 ? html`, replayed ${String(delivery.replayCount)} time${delivery.replayCount === 1 ? '' : 's'}` : ''}</dd>
    !${delivery.nextAttemptAt ? html`<dt>Next attempt</dt><dd>!${when(delivery.nextAttemptAt)}</dd>` : ''}
    !${delivery.lastError ? html`<dt>Last error</dt><dd>!${breakable(delivery.lastError)}</dd>` : ''}
    <dt>Created</dt><dd>!${when(delivery.createdAt)}</dd>
  </dl>
  <form method="post" action="${BASE}/deliveries/${delivery.id}/replay">
    !${csrfField(signedIn.csrfToken)}
    <button type="submit">Replay</button>
    <p class="hint">Sends the same event again (same delivery and event ids, so the receiver can deduplicate) as a new series of attempts. A delivery still queued or delivering cannot be replayed.</p>
  </form>
</section>
<section aria-labelledby="attempts-title">
  <h2 id="attempts-title">Attempts</h2>
  !${
    attempts.length === 0
      ? html`<p>No attempts yet.</p>`
      : html`<table class="keys cards"><caption class="visually-hidden">Attempts, newest first</caption><thead><tr><th scope="col">Attempt</th><th scope="col">Started</th><th scope="col">Response</th><th scope="col">Latency</th><th scope="col">Error</th><th scope="col">Response body</th></tr></thead>
      <tbody>!${attempts.map(attemptRow).join('')}</tbody></table>`
  }
  !${attempts.length >= ATTEMPTS_PER_DELIVERY ? html`<p class="hint">The latest ${String(ATTEMPTS_PER_DELIVERY)} attempts are shown.</p>` : ''}
</section>`,
    signedIn,
    'webhooks',
  );
}
