import { html } from 'ghtml';
import { CONTACT_STATUSES, type Contact } from '../../../db/entities/index.ts';
import type { TimelineEntry, TimelineKind } from '../contacts/contact-timeline.repo.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { contactState, nameOf } from './dashboard-contacts.pages.ts';
import { csrfField, layout, message, when } from './dashboard.pages.ts';

/** The edit form's fields as typed (shown again after an error). */
export interface ContactForm {
  email: string;
  first_name: string;
  last_name: string;
  company: string;
  tags: string;
  status: string;
  custom_fields: string;
}

export interface ContactPageModel {
  signedIn: SignedIn;
  contact: Contact;
  segments: readonly { id: string; name: string; type: string }[];
  timeline: readonly TimelineEntry[];
  form?: ContactForm;
  notice?: string;
  error?: string;
}

/** The form's values of a contact as stored. */
export function formOf(contact: Contact): ContactForm {
  return {
    email: contact.email,
    first_name: contact.firstName,
    last_name: contact.lastName,
    company: contact.company,
    tags: contact.tags.join(', '),
    status: contact.status,
    custom_fields: JSON.stringify(contact.customFields, null, 2),
  };
}

const KIND_LABELS: Record<TimelineKind, string> = {
  email: 'Email',
  email_event: 'Email event',
  automation_run: 'Automation run',
  event: 'Custom event',
  suppression: 'Suppressed',
  import: 'Import',
};

function timelineItem(entry: TimelineEntry): string {
  const title = entry.href ? html`<a href="${entry.href}">${entry.title || '(no subject)'}</a>` : html`${entry.title}`;
  return html`<li><span class="event ${entry.label}">${KIND_LABELS[entry.kind]}: ${entry.label}</span> !${title} !${when(entry.at)}</li>`;
}

function editForm(model: ContactPageModel): string {
  const { contact, signedIn } = model;
  const f = model.form ?? formOf(contact);
  const input = (name: keyof ContactForm, label: string, max: number, type = 'text') =>
    html`<label for="contact-${name}">${label}</label><input id="contact-${name}" name="${name}" type="${type}" maxlength="${String(max)}" value="${f[name]}">`;
  return html`<section aria-labelledby="edit-title" class="card">
  <h2 id="edit-title">Edit</h2>
  <form method="post" action="/dashboard/contacts/${contact.id}">
    !${csrfField(signedIn.csrfToken)}
    !${input('email', 'Email', 320, 'email')}
    !${input('first_name', 'First name', 200)}
    !${input('last_name', 'Last name', 200)}
    !${input('company', 'Company', 200)}
    <label for="contact-tags">Tags <small>(comma-separated, at most 100)</small></label>
    <input id="contact-tags" name="tags" type="text" maxlength="10100" value="${f.tags}">
    <label for="contact-status">Status</label>
    <select id="contact-status" name="status">!${CONTACT_STATUSES.map((s) => html`<option value="${s}"!${f.status === s ? ' selected' : ''}>${s}</option>`).join('')}</select>
    <label for="contact-custom_fields">Custom fields <small>(a JSON object)</small></label>
    <textarea id="contact-custom_fields" name="custom_fields" rows="5" spellcheck="false">${f.custom_fields}</textarea>
    <button type="submit">Save</button>
  </form>
</section>`;
}

/** /dashboard/contacts/:id: the contact's fields, tags, segments, timeline; edit and delete. */
export function contactPage(model: ContactPageModel): string {
  const { contact, signedIn } = model;
  const fact = (term: string, value: string) => html`<dt>${term}</dt><dd>!${value}</dd>`;
  const custom = Object.entries(contact.customFields);
  return layout(
    contact.email,
    html`<p><a href="/dashboard/contacts">← All contacts</a></p>
!${message(model.notice, 'notice')}!${message(model.error)}
<section aria-labelledby="contact-title" class="card">
  <h2 id="contact-title">The contact</h2>
  <dl class="facts">
    !${fact('Name', html`${nameOf(contact) || '—'}`)}
    !${fact('Company', html`${contact.company || '—'}`)}
    !${fact('Status', contactState(contact.status))}
    !${fact('Tags', contact.tags.length === 0 ? '—' : contact.tags.map((tag) => html`<code class="tag">${tag}</code>`).join(' '))}
    !${custom.map(([key, value]) => fact(key, html`<code>${JSON.stringify(value)}</code>`)).join('')}
    !${fact('Added', when(contact.createdAt))}
    !${fact('Updated', when(contact.updatedAt))}
  </dl>
</section>
<section aria-labelledby="segments-title">
  <h2 id="segments-title">Segments</h2>
  !${
    model.segments.length === 0
      ? html`<p>In no segment. <a href="/dashboard/segments">Segments</a> gather contacts by tag or by hand.</p>`
      : html`<ul>!${model.segments.map((s) => html`<li><a href="/dashboard/segments/${s.id}">${s.name}</a> <small class="hint">(${s.type})</small></li>`).join('')}</ul>`
  }
</section>
<section aria-labelledby="timeline-title">
  <h2 id="timeline-title">Timeline</h2>
  !${
    model.timeline.length === 0
      ? html`<p>Nothing yet: no email, automation run or event for this contact.</p>`
      : html`<ol class="timeline">!${model.timeline.map(timelineItem).join('')}</ol>`
  }
</section>
!${editForm(model)}
<section aria-labelledby="delete-title" class="card">
  <h2 id="delete-title">Delete</h2>
  <p>Deleting removes the contact, its segment memberships and its custom events. Emails already sent stay in the log.</p>
  <form method="post" action="/dashboard/contacts/${contact.id}/delete" data-confirm="Delete ${contact.email}? This cannot be undone.">
    !${csrfField(signedIn.csrfToken)}<button type="submit" class="danger">Delete contact</button>
  </form>
</section>`,
    signedIn,
    'contacts',
  );
}
