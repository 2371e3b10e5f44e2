import { html } from 'ghtml';
import type { WebhookEndpoint } from '../../../db/entities/index.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { breakable } from './dashboard-inbox.pages.ts';
import { layout, message, when } from './dashboard.pages.ts';

/**
 * The webhooks list page and what the webhooks pages share (state badges, the pager). Every
 * `${}` is escaped (URLs, names, response bodies are the receivers' or the API callers').
 */

export const BASE = '/dashboard/webhooks';

export const endpointState = (endpoint: WebhookEndpoint) => (endpoint.enabled ? 'enabled' : 'disabled');
export const stateBadge = (state: string) => html`<span class="state ${state}">${state}</span>`;
export const eventsSummary = (list: readonly string[]) => (list.includes('*') ? 'every event' : list.join(', '));

/** A link to the next (older) page, keeping the other query parameters. */
export function olderLink(path: string, params: Record<string, string | undefined>, label: string): string {
  const query = new URLSearchParams(
    Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''),
  );
  return html`<nav class="pager" aria-label="Pages"><a href="${path}?${query.toString()}" rel="next">${label}</a></nav>`;
}

export interface WebhooksPageModel {
  signedIn: SignedIn;
  notice?: string | undefined;
  endpoints: readonly WebhookEndpoint[];
  /** The query of the next page, when there is one. */
  older?: string | undefined;
}

export function webhooksPage(model: WebhooksPageModel): string {
  const rows = model.endpoints.map(
    (endpoint) => html`<tr>
      <th scope="row" data-label="Name"><a href="${BASE}/${endpoint.id}">${endpoint.name}</a></th>
      <td data-label="URL"><code>!${breakable(endpoint.url)}</code></td>
      <td data-label="Events">${eventsSummary(endpoint.events)}</td>
      <td data-label="State">!${stateBadge(endpointState(endpoint))}</td>
      <td data-label="Created">!${when(endpoint.createdAt)}</td>
    </tr>`,
  );
  return layout(
    'Webhooks',
    html`!${message(model.notice, 'notice')}
<p><a class="button" href="${BASE}/new">Add an endpoint</a></p>
<section aria-labelledby="endpoints-title">
  <h2 id="endpoints-title">Endpoints of ${model.signedIn.orgName}</h2>
  !${
    model.endpoints.length === 0
      ? html`<div class="empty"><p><strong>No endpoints yet.</strong> An endpoint is a URL of yours that Herald POSTs signed events to: deliveries, bounces, new contacts, inbound mail.</p><p><a href="${BASE}/new">Add your first endpoint</a>, then send it a test event from its page.</p></div>`
      : html`<table class="keys cards"><thead><tr><th scope="col">Name</th><th scope="col">URL</th><th scope="col">Events</th><th scope="col">State</th><th scope="col">Created</th></tr></thead>
      <tbody>!${rows.join('')}</tbody></table>`
  }
  !${model.older ? olderLink(BASE, { older: model.older }, 'Older endpoints') : ''}
  <p class="hint">Endpoints can also be registered with the API (<code>POST /api/v1/webhooks</code>). Open one to edit it, send it a test event, see its delivery log, replay deliveries or rotate its signing secret.</p>
</section>`,
    model.signedIn,
    'webhooks',
  );
}
