import { html } from 'ghtml';
import type { Segment } from '../../../db/entities/index.ts';
import { storedCountOf } from '../segments/segment-counts.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { contactState, nameOf, type ContactListItem } from './dashboard-contacts.pages.ts';
import { csrfField, layout, message, when } from './dashboard.pages.ts';

/**
 * The pages count a segment's members up to this many (a bounded read whatever its size: the
 * pages stay under 300 ms at a million contacts); past it they say `10,000+`. The API's
 * GET /segments gives the exact count.
 */
export const COUNT_CAP = 10_000;

/** A member count as the pages show it. */
export const countText = (count: number) => (count >= COUNT_CAP ? `${COUNT_CAP.toLocaleString('en')}+` : count.toLocaleString('en'));

/**
 * A segment's stored member count as lists show it (segment-counts.ts): a static segment's
 * exactly; a dynamic one's as an estimate, `≈ N`, with the time it was counted; `counting…`
 * when it has not been counted yet.
 */
export function storedCountHtml(segment: Pick<Segment, 'type' | 'memberCount' | 'countedAt'>): string {
  const stored = storedCountOf(segment);
  if (stored.count === null)
    return html`<span class="count-pending" title="Not counted yet: the count is being taken now">counting…</span>`;
  if (stored.exact) return html`<span class="count-exact">${stored.count.toLocaleString('en')}</span>`;
  return html`<span class="count-estimate" title="Counted at the time below; contacts may have changed since">≈ ${stored.count.toLocaleString('en')}</span> <span class="hint count-time">as of !${when(stored.countedAt)}</span>`;
}

/** The segment form's fields as typed. */
export interface SegmentForm {
  name: string;
  description: string;
  /** `dynamic` (by tags, or every contact) or `static` (members added by hand). */
  kind: string;
  tags: string;
}

export const ruleOf = (segment: Pick<Segment, 'type' | 'tags'>) =>
  segment.type === 'static'
    ? html`members added by hand`
    : segment.type === 'all'
      ? html`every contact`
      : html`contacts tagged !${segment.tags.map((tag) => html`<code class="tag">${tag}</code>`).join(' or ')}`;

function segmentRow(segment: Segment): string {
  return html`<tr>
    <th scope="row" data-label="Name"><a href="/dashboard/segments/${segment.id}">${segment.name}</a></th>
    <td data-label="Members">!${ruleOf(segment)}</td>
    <td data-label="Contacts" class="number">!${storedCountHtml(segment)}</td>
    <td data-label="Created">!${when(segment.createdAt)}</td>
  </tr>`;
}

/**
 * /dashboard/segments: the workspace's segments with their stored counts (exact for static
 * segments, an estimate with its time for dynamic ones).
 */
export function segmentsPage(model: { signedIn: SignedIn; segments: readonly Segment[]; olderHref: string | null }): string {
  return layout(
    'Segments',
    html`<p><a class="button" href="/dashboard/segments/new">New segment</a></p>
<section aria-labelledby="segments-title">
  <h2 id="segments-title">Segments, newest first</h2>
  !${
    model.segments.length === 0
      ? html`<div class="card empty"><p><strong>No segments yet.</strong></p><p><a href="/dashboard/segments/new">Create a segment</a>: contacts by tag (it follows their tags), every contact, or a list you fill by hand. Broadcasts and automations send to segments.</p></div>`
      : html`<table class="keys cards"><thead><tr><th scope="col">Name</th><th scope="col">Members</th><th scope="col" class="number">Contacts</th><th scope="col">Created</th></tr></thead>
      <tbody>!${model.segments.map((s) => segmentRow(s)).join('')}</tbody></table>
      <p class="hint">Static segments' counts are exact. A dynamic segment's count (≈) is its last full count, taken at the time shown and retaken when a page shows it more than a minute later; its own page counts it live.</p>`
  }
  !${model.olderHref ? html`<nav class="pager" aria-label="Pages"><a href="${model.olderHref}" rel="next">Older</a></nav>` : ''}
</section>`,
    model.signedIn,
    'segments',
  );
}

/** The create or edit form, with the live count of its rule (recounted when the tags change). */
export function segmentFormPage(model: {
  signedIn: SignedIn;
  segment?: Segment;
  form: SegmentForm;
  matching: number | null;
  error?: string;
}): string {
  const { form, segment } = model;
  const action = segment ? `/dashboard/segments/${segment.id}` : '/dashboard/segments';
  const kinds = segment ? [] : (['dynamic', 'static'] as const);
  const count =
    model.matching === null
      ? ''
      : html`<p class="live-count" role="status" id="live-count"><strong>${countText(model.matching)}</strong> contacts match this rule now.</p>`;
  return layout(
    segment ? `Edit ${segment.name}` : 'New segment',
    html`<p><a href="${segment ? `/dashboard/segments/${segment.id}` : '/dashboard/segments'}">← Back</a></p>
!${message(model.error)}
<form method="post" action="${action}" class="card" data-live-count>
  !${csrfField(model.signedIn.csrfToken)}
  <label for="segment-name">Name</label>
  <input id="segment-name" name="name" required maxlength="120" value="${form.name}">
  <label for="segment-description">Description <small>(optional)</small></label>
  <input id="segment-description" name="description" maxlength="500" value="${form.description}">
  !${
    kinds.length > 0
      ? html`<fieldset><legend>Members</legend>
    <label class="inline"><input type="radio" name="kind" value="dynamic"!${form.kind !== 'static' ? ' checked' : ''}> Dynamic: contacts with one of the tags below (every contact when none)</label>
    <label class="inline"><input type="radio" name="kind" value="static"!${form.kind === 'static' ? ' checked' : ''}> Static: contacts I add by hand</label>
  </fieldset>`
      : html`<input type="hidden" name="kind" value="${segment?.type === 'static' ? 'static' : 'dynamic'}">`
  }
  !${
    segment?.type === 'static'
      ? ''
      : html`<label for="segment-tags">Tags <small>(comma-separated; a contact with any of them is a member)</small></label>
  <input id="segment-tags" name="tags" maxlength="10100" value="${form.tags}" data-recount>
  !${count}
  <button type="submit" name="action" value="count" class="secondary">Count matching contacts</button>`
  }
  <button type="submit" name="action" value="save">!${segment ? 'Save' : 'Create segment'}</button>
</form>`,
    model.signedIn,
    'segments',
  );
}

function memberRow(contact: ContactListItem, segment: Segment, csrf: string): string {
  const remove =
    segment.type === 'static'
      ? html`<form method="post" action="/dashboard/segments/${segment.id}/members/remove" data-confirm="Remove ${contact.email} from ${segment.name}?">!${csrfField(csrf)}<input type="hidden" name="emails" value="${contact.email}"><button type="submit" class="danger">Remove</button></form>`
      : '';
  return html`<tr>
    <th scope="row" data-label="Email"><a href="/dashboard/contacts/${contact._id}">${contact.email}</a></th>
    <td data-label="Name">${nameOf(contact) || '—'}</td>
    <td data-label="Status">!${contactState(contact.status)}</td>
    <td data-label="">!${remove}</td>
  </tr>`;
}

/** /dashboard/segments/:id: the rule, the live count, the members a page at a time; a static segment's members added and removed. */
export function segmentPage(model: {
  signedIn: SignedIn;
  segment: Segment;
  contactCount: number;
  members: readonly ContactListItem[];
  olderHref: string | null;
  notice?: string;
  error?: string;
  emails?: string;
}): string {
  const { segment, signedIn } = model;
  const csrf = signedIn.csrfToken;
  const addForm =
    segment.type === 'static'
      ? html`<section class="card" aria-labelledby="add-members-title"><h2 id="add-members-title">Add or remove members</h2>
  <form method="post" action="/dashboard/segments/${segment.id}/members">
    !${csrfField(csrf)}
    <label for="member-emails">Addresses of contacts <small>(one a line or comma-separated, up to 1,000)</small></label>
    <textarea id="member-emails" name="emails" rows="4" spellcheck="false">${model.emails ?? ''}</textarea>
    <button type="submit" name="action" value="add">Add to the segment</button>
    <button type="submit" name="action" value="remove" class="secondary">Remove from the segment</button>
  </form></section>`
      : '';
  const empty =
    segment.type === 'static'
      ? html`<p>No members yet: add contacts by address below.</p>`
      : html`<p>No contact matches yet: <a href="/dashboard/contacts">tag contacts</a> or <a href="/dashboard/segments/${segment.id}/edit">change the rule</a>.</p>`;
  return layout(
    segment.name,
    html`<p><a href="/dashboard/segments">← All segments</a> · <a href="/dashboard/segments/${segment.id}/edit">Edit</a></p>
!${message(model.notice, 'notice')}!${message(model.error)}
<section class="card" aria-labelledby="rule-title">
  <h2 id="rule-title">Who is in it</h2>
  !${segment.description ? html`<p>${segment.description}</p>` : ''}
  <p>!${ruleOf(segment)}: <strong id="segment-count">${countText(model.contactCount)}</strong> contacts now.</p>
</section>
<section aria-labelledby="members-title">
  <h2 id="members-title">Members, newest first</h2>
  !${
    model.members.length === 0
      ? empty
      : html`<table class="keys cards"><thead><tr><th scope="col">Email</th><th scope="col">Name</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
      <tbody>!${model.members.map((c) => memberRow(c, segment, csrf)).join('')}</tbody></table>`
  }
  !${model.olderHref ? html`<nav class="pager" aria-label="Pages"><a href="${model.olderHref}" rel="next">Older</a></nav>` : ''}
</section>
!${addForm}`,
    signedIn,
    'segments',
  );
}
