import { html } from 'ghtml';
import { CONTACT_STATUSES } from '../../../db/entities/index.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { pagerNav } from './dashboard-paging.ts';
import { layout, message, when } from './dashboard.pages.ts';

/** A contact as the list shows it (the API's Contact: the page reads GET /contacts' JSON). */
export interface ContactListItem {
  _id: string;
  email: string;
  firstName: string;
  lastName: string;
  tags: string[];
  status: string;
  createdAt: string;
}

/** The list's filters as the form shows them (the raw values, valid or not). */
export interface ContactFilters {
  q: string;
  tag: string;
  status: string;
}

export interface ContactsPageModel {
  signedIn: SignedIn;
  filters: ContactFilters;
  contacts: readonly ContactListItem[];
  olderHref: string | null;
  newestHref: string | null;
  notice?: string;
  error?: string;
}

export const contactState = (status: string) => html`<span class="state contact-${status}">${status}</span>`;

export const nameOf = (contact: { firstName: string; lastName: string }) => `${contact.firstName} ${contact.lastName}`.trim();

const tagList = (tags: readonly string[]) =>
  tags.length === 0 ? html`<span class="hint">—</span>` : tags.map((tag) => html`<code class="tag">${tag}</code>`).join(' ');

function contactRow(contact: ContactListItem): string {
  return html`<tr>
    <th scope="row" data-label="Email"><a href="/dashboard/contacts/${contact._id}">${contact.email}</a></th>
    <td data-label="Name">${nameOf(contact) || '—'}</td>
    <td data-label="Tags">!${tagList(contact.tags)}</td>
    <td data-label="Status">!${contactState(contact.status)}</td>
    <td data-label="Added">!${when(new Date(contact.createdAt))}</td>
  </tr>`;
}

/** What to do when the list is empty: import or add contacts, or loosen the filters. */
function emptyState(filtered: boolean, error: boolean): string {
  if (error) return html`<p>Fix the search to see contacts.</p>`;
  if (filtered) return html`<p>No contact matches. <a href="/dashboard/contacts">Show all contacts</a>.</p>`;
  return html`<div class="card empty"><p><strong>No contacts yet.</strong></p>
    <p><a class="button" href="/dashboard/contacts/imports/new">Import a CSV file</a> or add them with <code>POST /api/v1/contacts</code>.</p></div>`;
}

/** /dashboard/contacts: the workspace's contacts, newest first, searched and filtered, a page at a time. */
export function contactsPage(model: ContactsPageModel): string {
  const { signedIn, filters } = model;
  const filtered = filters.q !== '' || filters.tag !== '' || filters.status !== '';
  const exportQuery = filters.status && (CONTACT_STATUSES as readonly string[]).includes(filters.status) ? `?status=${filters.status}` : '';
  return layout(
    'Contacts',
    html`<p class="actions"><a class="button" href="/dashboard/contacts/imports/new">Import CSV</a>
  <a class="button secondary" href="/dashboard/contacts/export.csv${exportQuery}" download>Export CSV</a>
  <a href="/dashboard/contacts/imports">Imports</a></p>
<form method="get" action="/dashboard/contacts" class="card filters" role="search" aria-label="Search the contacts">
  <div><label for="filter-q">Email or name <small>(3+ characters)</small></label>
    <input id="filter-q" name="q" type="search" maxlength="200" autocomplete="off" value="${filters.q}"></div>
  <div><label for="filter-tag">Tag</label>
    <input id="filter-tag" name="tag" type="text" maxlength="100" autocomplete="off" value="${filters.tag}"></div>
  <div><label for="filter-status">Status</label>
    <select id="filter-status" name="status">
      <option value="">Any</option>
      !${CONTACT_STATUSES.map((s) => html`<option value="${s}"!${filters.status === s ? ' selected' : ''}>${s}</option>`).join('')}
    </select></div>
  <div class="filter-actions"><button type="submit">Search</button>!${filtered ? html` <a href="/dashboard/contacts">Clear</a>` : ''}</div>
</form>
!${message(model.notice, 'notice')}!${message(model.error)}
<section aria-labelledby="contacts-title">
  <h2 id="contacts-title">!${filtered ? 'Matching contacts' : 'Contacts'}, newest first</h2>
  !${
    model.contacts.length === 0
      ? emptyState(filtered, model.error !== undefined)
      : html`<table class="keys cards contacts"><thead><tr><th scope="col">Email</th><th scope="col">Name</th><th scope="col">Tags</th><th scope="col">Status</th><th scope="col">Added</th></tr></thead>
      <tbody>!${model.contacts.map(contactRow).join('')}</tbody></table>`
  }
  !${pagerNav({ newest: model.newestHref, older: model.olderHref })}
</section>`,
    signedIn,
    'contacts',
  );
}
