import { html } from 'ghtml';
import type { WebhookEndpoint } from '../../../db/entities/index.ts';
import { ALL_EVENTS, EVENT_CATALOG, EVENT_CATEGORIES, isAddressedType } from '../events/events.schemas.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { breakable } from './dashboard-inbox.pages.ts';
import { csrfField, layout } from './dashboard.pages.ts';
import { BASE } from './dashboard-webhooks.pages.ts';

/**
 * The endpoint form (create and edit) with its events picker, and the page that confirms a
 * deletion. The limits are the API's (WEBHOOK_LIMITS), given to the browser as maxlength too.
 */

/** The form's values (what was typed, shown again after a refusal). */
export interface EndpointFormValues {
  name: string;
  url: string;
  description: string;
  events: readonly string[];
}

export interface EndpointFormModel {
  signedIn: SignedIn;
  limits: { name: number; url: number; description: number };
  /** The endpoint being edited; none when creating. */
  endpoint?: WebhookEndpoint;
  values: EndpointFormValues;
  /** Field problems, as "field: what is wrong". */
  errors?: readonly string[];
}

/** Every subscribable type by category (addressed types go only where they are addressed: not offered). */
function eventsPicker(chosen: ReadonlySet<string>): string {
  const groups = EVENT_CATEGORIES.map((category) => {
    const types = EVENT_CATALOG.filter((event) => event.category === category && !isAddressedType(event.type));
    if (types.length === 0) return '';
    return html`<fieldset class="event-group"><legend>${category[0]!.toUpperCase()}${category.slice(1)}</legend>
      <ul class="scope-list">!${types
        .map(
          (event) =>
            html`<li><label class="inline"><input type="checkbox" name="events" value="${event.type}"!${chosen.has(event.type) ? ' checked' : ''}> <code>${event.type}</code></label> <span class="hint">${event.description}</span></li>`,
        )
        .join('')}</ul></fieldset>`;
  });
  return html`<fieldset aria-describedby="events-hint"><legend>Events</legend>
    <p class="hint" id="events-hint">What this endpoint receives. The payloads are described at <a href="/docs/events">/docs/events</a>.</p>
    <label class="inline"><input type="checkbox" name="events" value="${ALL_EVENTS}"!${chosen.has(ALL_EVENTS) ? ' checked' : ''}> <strong>Every event</strong>, including types added later</label>
    !${groups.join('')}
  </fieldset>`;
}

export function endpointFormPage(model: EndpointFormModel): string {
  const { signedIn, endpoint, values, limits } = model;
  const action = endpoint ? `${BASE}/${endpoint.id}/edit` : BASE;
  const errors = model.errors?.length
    ? html`<div class="error" role="alert"><h2>The endpoint was not saved</h2><ul>!${model.errors.map((e) => html`<li>${e}</li>`).join('')}</ul></div>`
    : '';
  const https = signedIn.role === 'owner' ? 'An https URL.' : 'An https URL (http is accepted for test endpoints).';
  return layout(
    endpoint ? `Edit ${endpoint.name}` : 'Add a webhook endpoint',
    html`!${errors}
<form method="post" action="${action}" class="card">
  !${csrfField(signedIn.csrfToken)}
  <label for="endpoint-name">Name</label>
  <input id="endpoint-name" name="name" type="text" required maxlength="${String(limits.name)}" value="${values.name}">
  <label for="endpoint-url">URL</label>
  <input id="endpoint-url" name="url" type="url" required maxlength="${String(limits.url)}" value="${values.url}" aria-describedby="url-hint" spellcheck="false">
  <p class="hint" id="url-hint">${https} Herald POSTs each event to it as JSON and retries until it answers 2xx.</p>
  <label for="endpoint-description">Description <small>(optional)</small></label>
  <textarea id="endpoint-description" name="description" rows="2" maxlength="${String(limits.description)}">${values.description}</textarea>
  !${eventsPicker(new Set(values.events))}
  <div class="editor-actions"><button type="submit">${endpoint ? 'Save changes' : 'Add endpoint'}</button> <a href="${endpoint ? `${BASE}/${endpoint.id}` : BASE}">Cancel</a></div>
</form>`,
    signedIn,
    'webhooks',
  );
}

/** The confirmation of a deletion: what it does, then one button. */
export function deleteEndpointPage(model: { signedIn: SignedIn; endpoint: WebhookEndpoint; queued: number }): string {
  const { signedIn, endpoint } = model;
  return layout(
    `Delete ${endpoint.name}?`,
    html`<section class="card" aria-labelledby="consequences-title">
  <h2 id="consequences-title">What deleting does</h2>
  <ul>
    <li>Herald stops sending events to <code>!${breakable(endpoint.url)}</code> at once.</li>
    <li>!${model.queued > 0 ? html`<strong>${String(model.queued)} deliver${model.queued === 1 ? 'y' : 'ies'} waiting to be sent or retried</strong> end as exhausted and are not sent.` : 'No delivery is waiting to be sent.'} An attempt already in flight finishes.</li>
    <li>Its delivery log stays readable from the API, but its deliveries can no longer be replayed.</li>
    <li>Its signing secret is destroyed. This cannot be undone: to receive events again, add a new endpoint (with a new secret).</li>
  </ul>
  <p class="hint">To pause deliveries instead, disable the endpoint: it keeps its secret and can be enabled again.</p>
  <form method="post" action="${BASE}/${endpoint.id}/delete" class="editor-actions">
    !${csrfField(signedIn.csrfToken)}
    <button type="submit" class="danger large">Delete endpoint</button> <a href="${BASE}/${endpoint.id}">Keep it</a>
  </form>
</section>`,
    signedIn,
    'webhooks',
  );
}
