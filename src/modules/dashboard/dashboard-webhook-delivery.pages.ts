import { html } from 'ghtml';
import type { WebhookAttempt, WebhookDelivery, WebhookEndpoint } from '../../../db/entities/index.ts';
import { ATTEMPTS_PER_DELIVERY } from '../webhooks/deliveries.repo.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { breakable } from './dashboard-inbox.pages.ts';
import { csrfField, layout, message, when } from './dashboard.pages.ts';
import { BASE, stateBadge } from './dashboard-webhooks.pages.ts';

/** One delivery with its attempts (response code and body, newest first) and a replay button. */

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
