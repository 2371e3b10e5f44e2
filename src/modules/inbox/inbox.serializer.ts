import type { InboxAttachment, InboxMessage, InboxThread, MailboxAddress } from '../../../db/entities/index.ts';
import { snippetOf } from './inbox.fns.ts';
import type { ThreadSummaries } from './inbox.repo.ts';
import type { MessageDetail, MessageReference } from './inbox.service.ts';

const iso = (date: Date) => date.toISOString();

function mailbox(address: Partial<MailboxAddress>) {
  return { email: address.email ?? '', name: address.name ?? '' };
}

/** From as `{email, name}`, or null when the message had no readable From address. */
function sender(email: string, name: string) {
  return email === '' ? null : { email, name };
}

/** An attachment as listed on its message (only stored ones are listed). */
export function serializeAttachment(attachment: InboxAttachment) {
  return {
    id: attachment.id,
    filename: attachment.filename,
    content_type: attachment.contentType,
    size_bytes: attachment.sizeBytes,
  };
}

/** The spec's Inbox message (snake_case) plus the extension fields cc, kind, auth_results, email_id, sent_at. */
export function serializeInboxMessage(message: InboxMessage, attachments: readonly InboxAttachment[]) {
  return {
    id: message.id,
    thread_id: message.threadId,
    direction: message.direction,
    subject: message.subject,
    text: message.text,
    from: sender(message.fromEmail, message.fromName),
    to: message.to.map(mailbox),
    rfc_message_id: message.rfcMessageId ?? null,
    in_reply_to_message_id: message.inReplyTo ?? null,
    references_rfc: message.references,
    attachments: attachments.map(serializeAttachment),
    attachment_ingest_status: message.attachmentIngestStatus,
    failed_attachments: message.failedAttachments.map((failed) => ({ filename: failed.filename, reason: 'ingest_failed' as const })),
    attachment_count: message.attachmentCount,
    attachments_ready: message.attachmentsReady,
    cc: message.cc.map(mailbox),
    kind: message.kind,
    auth_results: message.authResults ?? null,
    email_id: message.emailId ?? null,
    sent_at: message.sentAt ? iso(message.sentAt) : null,
    read: message.readAt !== null && message.readAt !== undefined,
    read_at: message.readAt ? iso(message.readAt) : null,
    starred: message.starred,
    tags: message.tags,
    created_at: iso(message.createdAt),
    updated_at: iso(message.updatedAt),
  };
}

function serializeReference(reference: MessageReference) {
  return {
    id: reference.id,
    thread_id: reference.threadId,
    direction: reference.direction,
    subject: reference.subject,
    created_at: iso(reference.createdAt),
  };
}

/** GET /inbox/messages/{id}: the message, its HTML body and reply correlation. */
export function serializeInboxMessageDetail(detail: MessageDetail) {
  return {
    ...serializeInboxMessage(detail.message, detail.attachments),
    html: detail.message.html ?? null,
    in_reply_to: detail.inReplyTo ? serializeReference(detail.inReplyTo) : null,
    replies: detail.replies.map(serializeReference),
  };
}

/** Herald's thread record (the spec leaves it open; docs/inbox.md describes it). */
export function serializeThread(thread: InboxThread, summaries: ThreadSummaries) {
  const last = summaries.lastMessages.get(thread.id);
  return {
    id: thread.id,
    subject: thread.subject,
    participants: thread.participants,
    message_count: thread.messageCount,
    last_message_at: iso(thread.lastMessageAt),
    attachments_ready: !summaries.pendingThreadIds.has(thread.id),
    last_message: last
      ? {
          id: last.id,
          direction: last.direction,
          kind: last.kind,
          from: sender(last.fromEmail, last.fromName),
          snippet: snippetOf(last.textStart),
          created_at: iso(last.createdAt),
        }
      : null,
    unread_count: summaries.unreadCounts.get(thread.id) ?? 0,
    starred: thread.starred,
    archived: thread.archived,
    tags: thread.tags,
    created_at: iso(thread.createdAt),
    updated_at: iso(thread.updatedAt),
  };
}
