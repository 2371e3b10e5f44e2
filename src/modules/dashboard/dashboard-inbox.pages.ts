import { html } from 'ghtml';
import type { InboxAttachment, InboxMessage, InboxThread, MailboxAddress } from '../../../db/entities/index.ts';
import { snippetOf } from '../inbox/inbox.fns.ts';
import type { ThreadSummaries } from '../inbox/inbox.repo.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { csrfField, layout, message, when } from './dashboard.pages.ts';

/**
 * The inbox pages: threads (most recent first) and one thread's messages. Everything a sender
 * wrote is escaped; an HTML body is never inlined: it is escaped into the `srcdoc` of an iframe
 * with an empty `sandbox` (no scripts, no forms, an opaque origin), which also inherits the
 * page's Content-Security-Policy (no remote images or styles).
 */

const BASE = '/dashboard/inbox';

const subjectOf = (subject: string) => (subject.trim() === '' ? '(no subject)' : subject);

/** Characters after which a long run may break (URLs, addresses, ids). */
const BREAK_AFTER = new Set(['/', '?', '&', '=', '.', '-', '_', '@', ':', ',', ';', '+']);
const LONG_RUN = 16;
const PIECE = 16;

/**
 * Escaped text with break opportunities (`<wbr>`) in runs longer than LONG_RUN characters
 * without a space (URLs, addresses, ids), so they wrap on a phone instead of widening the page.
 */
export function breakable(text: string): string {
  return text
    .split(/(\s+)/u)
    .map((run) => {
      if ([...run].length <= LONG_RUN) return html`${run}`;
      const pieces: string[] = [];
      let piece = '';
      for (const char of run) {
        piece += char;
        if (BREAK_AFTER.has(char) || [...piece].length >= PIECE) {
          pieces.push(piece);
          piece = '';
        }
      }
      if (piece !== '') pieces.push(piece);
      return pieces.map((part) => html`${part}`).join('<wbr>');
    })
    .join('');
}

/** `Name <email>`, or the address alone. */
export const addressOf = (address: Partial<MailboxAddress>) =>
  address.name ? `${address.name} <${address.email ?? ''}>` : (address.email ?? '');

const addresses = (list: readonly MailboxAddress[]) => (list.length === 0 ? '—' : list.map(addressOf).join(', '));

/** A size for people: bytes, KB or MB. */
export function sizeOf(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** A text body as paragraphs (blank lines) and line breaks, so it wraps without preformatting. */
function textBody(text: string): string {
  const paragraphs = text
    .replace(/\r\n?/g, '\n')
    .split(/\n{2,}/)
    .map((paragraph) => paragraph.replace(/^\n+|\n+$/g, ''))
    .filter((paragraph) => paragraph.trim() !== '');
  return paragraphs.map((paragraph) => html`<p>!${paragraph.split('\n').map(breakable).join('<br>')}</p>`).join('');
}

export interface InboxPageModel {
  signedIn: SignedIn;
  threads: readonly InboxThread[];
  summaries: ThreadSummaries;
  /** The `older` parameter of the next page, when there is one. */
  older?: string | undefined;
}

function threadRow(thread: InboxThread, summaries: ThreadSummaries): string {
  const unread = summaries.unreadCounts.get(thread.id) ?? 0;
  const last = summaries.lastMessages.get(thread.id);
  const subject = html`<a href="${BASE}/threads/${thread.id}">!${breakable(subjectOf(thread.subject))}</a>`;
  return html`<tr>
    <th scope="row" data-label="Subject">!${unread > 0 ? html`<strong>!${subject}</strong> <span class="state unread">${String(unread)} unread</span>` : subject}</th>
    <td data-label="Participants"><span>!${breakable(thread.participants.join(', '))}</span></td>
    <td data-label="Messages">${String(thread.messageCount)}</td>
    <td data-label="Latest">!${last ? html`<span>!${breakable(addressOf({ email: last.fromEmail, name: last.fromName }))}<br><span class="hint">!${breakable(snippetOf(last.textStart))}</span></span>` : '—'}</td>
    <td data-label="Date">!${when(thread.lastMessageAt)}</td>
  </tr>`;
}

export function inboxPage(model: InboxPageModel): string {
  return layout(
    'Inbox',
    html`<section aria-labelledby="threads-title">
  <h2 id="threads-title">Conversations</h2>
  !${
    model.threads.length === 0
      ? html`<div class="empty"><p><strong>No conversations yet.</strong> Messages received on the workspace's domains appear here: point a domain's MX record at this Herald server to receive mail.</p></div>`
      : html`<table class="keys cards"><caption class="visually-hidden">Threads, most recent first</caption><thead><tr><th scope="col">Subject</th><th scope="col">Participants</th><th scope="col">Messages</th><th scope="col">Latest</th><th scope="col">Date</th></tr></thead>
      <tbody>!${model.threads.map((thread) => threadRow(thread, model.summaries)).join('')}</tbody></table>`
  }
  !${model.older ? html`<nav class="pager" aria-label="Pages"><a href="${BASE}?older=${model.older}" rel="next">Older conversations</a></nav>` : ''}
</section>`,
    model.signedIn,
    'inbox',
  );
}

export interface ThreadPageModel {
  signedIn: SignedIn;
  thread: InboxThread;
  unreadCount: number;
  messages: readonly InboxMessage[];
  attachments: ReadonlyMap<string, InboxAttachment[]>;
  /** More messages than the page shows. */
  truncated: boolean;
  notice?: string;
}

function attachmentList(item: InboxMessage, attachments: readonly InboxAttachment[]): string {
  const failed = item.failedAttachments;
  const pending = !item.attachmentsReady;
  if (attachments.length === 0 && failed.length === 0 && !pending) return '';
  return html`<h3 id="a-${item.id}">Attachments</h3>
    !${
      attachments.length > 0
        ? html`<ul aria-labelledby="a-${item.id}">!${attachments
            .map(
              (attachment) =>
                html`<li><a href="${BASE}/messages/${item.id}/attachments/${attachment.id}" download>!${breakable(attachment.filename)}</a> <span class="hint">${attachment.contentType}, ${sizeOf(attachment.sizeBytes)}</span></li>`,
            )
            .join('')}</ul><p class="hint">These files come from outside the workspace: scan them before opening.</p>`
        : ''
    }
    !${failed.length > 0 ? html`<p class="hint">Not stored: !${breakable(failed.map((f) => f.filename).join(', '))}.</p>` : ''}
    !${pending ? html`<p class="hint">Attachments are still being processed: reload the page in a moment.</p>` : ''}`;
}

function messageArticle(item: InboxMessage, thread: InboxThread, attachments: readonly InboxAttachment[]): string {
  const from = item.fromEmail === '' ? '(no sender)' : addressOf({ email: item.fromEmail, name: item.fromName });
  const hasText = item.text.trim() !== '';
  const hasHtml = typeof item.html === 'string' && item.html.trim() !== '';
  return html`<article class="card" aria-labelledby="m-${item.id}">
  <h2 id="m-${item.id}">${item.direction === 'inbound' ? 'From' : 'Sent by'} !${breakable(from)}!${item.readAt ? '' : html` <span class="state unread">unread</span>`}</h2>
  <dl class="facts">
    <dt>To</dt><dd>!${breakable(addresses(item.to))}</dd>
    !${item.cc.length > 0 ? html`<dt>Cc</dt><dd>!${breakable(addresses(item.cc))}</dd>` : ''}
    <dt>Date</dt><dd>!${when(item.sentAt ?? item.createdAt)}</dd>
    !${item.subject !== thread.subject ? html`<dt>Subject</dt><dd>!${breakable(subjectOf(item.subject))}</dd>` : ''}
    !${item.kind !== 'message' ? html`<dt>Kind</dt><dd>${item.kind.replace('_', ' ')}</dd>` : ''}
  </dl>
  !${hasText ? html`<div class="message-text">!${textBody(item.text)}</div>` : hasHtml ? '' : html`<p class="hint">No text body.</p>`}
  !${
    hasHtml
      ? html`<details!${hasText ? '' : ' open'}><summary>HTML version (shown sandboxed: no scripts, no remote content)</summary>
      <iframe class="message-html" sandbox referrerpolicy="no-referrer" height="400" title="HTML body of the message from ${from}" srcdoc="${item.html ?? ''}"></iframe>
    </details>`
      : ''
  }
  !${attachmentList(item, attachments)}
</article>`;
}

export function threadPage(model: ThreadPageModel): string {
  const { thread, signedIn } = model;
  const readForm = html`<form method="post" action="${BASE}/threads/${thread.id}/read">
    !${csrfField(signedIn.csrfToken)}
    <input type="hidden" name="read" value="${model.unreadCount > 0 ? 'true' : 'false'}">
    <button type="submit">${model.unreadCount > 0 ? 'Mark as read' : 'Mark as unread'}</button>
  </form>`;
  return layout(
    subjectOf(thread.subject),
    html`!${message(model.notice, 'notice')}
<section aria-labelledby="thread-title" class="card">
  <h2 id="thread-title">Conversation</h2>
  <dl class="facts">
    <dt>Participants</dt><dd>!${breakable(thread.participants.join(', ') || '—')}</dd>
    <dt>Messages</dt><dd>${String(thread.messageCount)}!${model.unreadCount > 0 ? html` <span class="state unread">${String(model.unreadCount)} unread</span>` : ''}</dd>
    <dt>Latest</dt><dd>!${when(thread.lastMessageAt)}</dd>
  </dl>
  !${readForm}
  <p><a href="${BASE}">All conversations</a></p>
</section>
!${model.truncated ? html`<p class="hint">This conversation is long: ${String(model.messages.length)} of its messages are shown.</p>` : ''}
!${model.messages.map((item) => messageArticle(item, thread, model.attachments.get(item.id) ?? [])).join('')}`,
    signedIn,
    'inbox',
  );
}
