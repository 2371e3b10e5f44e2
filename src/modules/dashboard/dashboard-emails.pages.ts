import { html } from 'ghtml';
import {
  EMAIL_STATUSES,
  type EmailEventType,
  type EmailRecipient,
  type RecipientStatus,
  type TransactionalEmail,
} from '../../../db/entities/index.ts';
import type { EmailEventView } from '../sends/email-log.repo.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { layout, message, when } from './dashboard.pages.ts';

/** An instant to the second, `YYYY-MM-DD HH:MM:SS UTC`, in a <time> element (a timeline needs the seconds). */
const at = (date: Date) => html`<time datetime="${date.toISOString()}">${date.toISOString().slice(0, 19).replace('T', ' ')} UTC</time>`;

const state = (status: string) => html`<span class="state ${status}">${status}</span>`;

const fromOf = (email: Pick<TransactionalEmail, 'fromName' | 'fromEmail'>) =>
  email.fromName ? `${email.fromName} <${email.fromEmail}>` : email.fromEmail;

const subjectOf = (email: Pick<TransactionalEmail, 'subject'>) => (email.subject.trim() === '' ? '(no subject)' : email.subject);

/** The email log's filters as the form shows them (the raw values, valid or not). */
export interface EmailFilters {
  status: string;
  to: string;
  from: string;
}

export interface EmailsPageModel {
  signedIn: SignedIn;
  filters: EmailFilters;
  emails: readonly TransactionalEmail[];
  recipients: ReadonlyMap<string, readonly EmailRecipient[]>;
  /** The link to the next (older) page, when there is one. */
  olderHref: string | null;
  /** The link back to the newest page, when this is an older one. */
  newestHref: string | null;
  error?: string;
}

function recipientsCell(recipients: readonly EmailRecipient[]): string {
  if (recipients.length === 0) return '—';
  const shown = recipients
    .slice(0, 2)
    .map((r) => r.email)
    .join(', ');
  return html`${shown}!${recipients.length > 2 ? html` <small class="hint">+${String(recipients.length - 2)} more</small>` : ''}`;
}

function emailRow(email: TransactionalEmail, recipients: readonly EmailRecipient[]): string {
  return html`<tr>
    <td data-label="Created">!${when(email.createdAt)}</td>
    <th scope="row" data-label="Subject"><a href="/dashboard/emails/${email.id}">${subjectOf(email)}</a></th>
    <td data-label="From">${fromOf(email)}</td>
    <td data-label="To">!${recipientsCell(recipients)}</td>
    <td data-label="Status">!${state(email.status)}</td>
  </tr>`;
}

/** /dashboard/emails: the email log (transactional emails, newest first), filtered, a page at a time. */
export function emailsPage(model: EmailsPageModel): string {
  const { signedIn, filters } = model;
  const filtered = filters.status !== '' || filters.to !== '' || filters.from !== '';
  const pager = [
    model.newestHref ? html`<a href="${model.newestHref}">Newest</a>` : '',
    model.olderHref ? html`<a href="${model.olderHref}" rel="next">Older</a>` : '',
  ].filter((link) => link !== '');
  return layout(
    'Emails',
    html`<form method="get" action="/dashboard/emails" class="card filters" role="search" aria-label="Filter the emails">
  <div><label for="filter-status">Status</label>
    <select id="filter-status" name="status">
      <option value="">Any</option>
      !${EMAIL_STATUSES.map((s) => html`<option value="${s}"!${filters.status === s ? ' selected' : ''}>${s}</option>`).join('')}
    </select></div>
  <div><label for="filter-to">Recipient</label>
    <input id="filter-to" name="to" type="email" maxlength="320" autocomplete="off" value="${filters.to}"></div>
  <div><label for="filter-from">From <small>(address or domain)</small></label>
    <input id="filter-from" name="from" type="text" maxlength="320" autocomplete="off" spellcheck="false" value="${filters.from}"></div>
  <div class="filter-actions"><button type="submit">Filter</button>!${filtered ? html` <a href="/dashboard/emails">Clear</a>` : ''}</div>
</form>
!${message(model.error)}
<section aria-labelledby="log-title">
  <h2 id="log-title">!${filtered ? 'Matching emails' : 'Transactional emails'}, newest first</h2>
  !${
    model.emails.length === 0
      ? html`<p>${model.error ? 'Fix the filters to see emails.' : filtered ? 'No email matches these filters.' : 'No emails yet. Send one with POST /api/v1/outbox/emails or over SMTP from a verified domain, and it appears here with its delivery timeline.'}</p>`
      : html`<table class="keys cards emails"><thead><tr><th scope="col">Created</th><th scope="col">Subject</th><th scope="col">From</th><th scope="col">To</th><th scope="col">Status</th></tr></thead>
      <tbody>!${model.emails.map((email) => emailRow(email, model.recipients.get(email.id) ?? [])).join('')}</tbody></table>`
  }
  !${pager.length > 0 ? html`<nav class="pager" aria-label="Pages">!${pager.join(' ')}</nav>` : ''}
</section>`,
    signedIn,
    'emails',
  );
}

const EVENT_LABELS: Record<EmailEventType, string> = {
  sent: 'Sent: the relay accepted it',
  delivered: 'Delivered: the receiving server accepted it',
  deferred: 'Deferred: the receiving server refused for now (retrying)',
  failed: 'Failed: it could not be handed over',
  opened: 'Opened',
  clicked: 'Clicked',
  bounced: 'Bounced',
  complained: 'Complained: marked as spam',
  unsubscribed: 'Unsubscribed',
};

/**
 * The event whose outcome the recipient's stored last response belongs to: the latest event of
 * the kind that wrote it (the relay's reply on sent; the deferral, bounce or failure), else none.
 */
function responseEventType(status: RecipientStatus): EmailEventType | null {
  if (status === 'deferred' || status === 'bounced' || status === 'failed') return status;
  if (status === 'sent' || status === 'delivered' || status === 'complained') return 'sent';
  return null;
}

/** The remote server's reply as stored on the recipient: its SMTP code (when not already leading the text) and text. */
function diagnostic(recipient: EmailRecipient): string {
  const text = recipient.lastResponse ?? '';
  const code =
    recipient.lastResponseCode !== null && recipient.lastResponseCode !== undefined && !text.startsWith(String(recipient.lastResponseCode))
      ? `${recipient.lastResponseCode} `
      : '';
  const kind =
    recipient.status === 'bounced' && recipient.bounceType ? html` <small class="hint">(${recipient.bounceType} bounce)</small>` : '';
  return html`<div class="diagnostic"><span class="hint">Remote server:</span> <code>${code}${text}</code>!${kind}</div>`;
}

interface RecipientTimeline {
  address: string;
  recipient: EmailRecipient | undefined;
  events: EmailEventView[];
}

function timeline(email: TransactionalEmail, entry: RecipientTimeline, index: number): string {
  const { recipient, events } = entry;
  const target = recipient?.lastResponse ? responseEventType(recipient.status) : null;
  const carrier = target ? events.findLastIndex((event) => event.type === target) : -1;
  const headingId = `recipient-${String(index)}`;
  const items = [
    html`<li><span class="event accepted">Accepted</span> !${at(email.createdAt)}!${email.scheduledAt ? html` <small class="hint">(scheduled for !${at(email.scheduledAt)})</small>` : ''}</li>`,
    ...events.map(
      (event, i) =>
        html`<li><span class="event ${event.type}">${EVENT_LABELS[event.type]}</span> !${at(event.occurredAt)}!${i === carrier && recipient ? diagnostic(recipient) : ''}</li>`,
    ),
  ];
  const waiting =
    recipient?.status === 'deferred' && recipient.nextAttemptAt
      ? html`<li class="hint">Next attempt at !${at(recipient.nextAttemptAt)}</li>`
      : '';
  return html`<section class="card recipient" aria-labelledby="${headingId}">
  <h3 id="${headingId}">${entry.address} !${recipient ? html`<small class="hint">(${recipient.kind})</small> !${state(recipient.status)}` : ''}</h3>
  !${recipient && recipient.attempts > 0 ? html`<p class="hint">Delivery attempts: ${String(recipient.attempts)}</p>` : ''}
  <ol class="timeline">!${items.join('')}!${waiting}</ol>
  !${recipient?.lastResponse && carrier === -1 ? diagnostic(recipient) : ''}
</section>`;
}

export interface EmailPageModel {
  signedIn: SignedIn;
  email: TransactionalEmail;
  recipients: readonly EmailRecipient[];
  events: readonly EmailEventView[];
}

/** /dashboard/emails/:id: the email and each recipient's timeline (accepted, then its events, oldest first). */
export function emailPage(model: EmailPageModel): string {
  const { signedIn, email } = model;
  const entries: RecipientTimeline[] = model.recipients.map((recipient) => ({ address: recipient.email, recipient, events: [] }));
  for (const event of model.events) {
    let entry = entries.find((e) => e.address === event.recipient);
    if (!entry) {
      entry = { address: event.recipient, recipient: undefined, events: [] };
      entries.push(entry);
    }
    entry.events.push(event);
  }
  const fact = (term: string, value: string) => html`<dt>${term}</dt><dd>!${value}</dd>`;
  return layout(
    subjectOf(email),
    html`<p><a href="/dashboard/emails">← All emails</a></p>
<section aria-labelledby="email-title" class="card">
  <h2 id="email-title">The email</h2>
  <dl class="facts">
    !${fact('From', html`${fromOf(email)}`)}
    !${fact('Subject', html`${subjectOf(email)}`)}
    !${fact('Status', state(email.status))}
    !${fact('Created', at(email.createdAt))}
    !${email.scheduledAt ? fact('Scheduled for', at(email.scheduledAt)) : ''}
    !${email.sentAt ? fact('Sent', at(email.sentAt)) : ''}
    !${email.cancelledAt ? fact('Cancelled', at(email.cancelledAt)) : ''}
    !${fact('Message-ID', html`<code>${email.messageId}</code>`)}
    !${email.tags.length > 0 ? fact('Tags', email.tags.map((tag) => html`<code>${tag}</code>`).join(' ')) : ''}
    !${email.lastError ? fact('Last error', html`${email.lastError}`) : ''}
  </dl>
</section>
<section aria-labelledby="timeline-title">
  <h2 id="timeline-title">Timeline per recipient</h2>
  !${entries.length === 0 ? html`<p>This email has no recipients.</p>` : entries.map((entry, index) => timeline(email, entry, index)).join('')}
</section>`,
    signedIn,
    'emails',
  );
}
