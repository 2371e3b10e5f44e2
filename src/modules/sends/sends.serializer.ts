import type { EmailRecipient, TransactionalEmail } from '../../../db/entities/index.ts';
import type { EmailEventView } from './email-log.repo.ts';

const iso = (value: Date | null | undefined) => (value ? value.toISOString() : null);

/** What the email record shows of an email (an entity, or the row acceptance just wrote). */
export type EmailRecord = Pick<
  TransactionalEmail,
  | 'id'
  | 'messageId'
  | 'status'
  | 'templateId'
  | 'templateVersion'
  | 'tags'
  | 'stream'
  | 'trackOpens'
  | 'trackClicks'
  | 'fromName'
  | 'fromEmail'
  | 'subject'
  | 'replyTo'
  | 'scheduledAt'
  | 'attachments'
  | 'creditsCharged'
  | 'overageCharged'
  | 'lastError'
  | 'createdAt'
  | 'updatedAt'
  | 'sentAt'
  | 'cancelledAt'
>;

/** What the email record shows of a recipient. */
export type RecipientRecord = Pick<
  EmailRecipient,
  'email' | 'kind' | 'status' | 'attempts' | 'lastResponse' | 'bounceType' | 'nextAttemptAt' | 'updatedAt'
>;

/** The transactional email record: `_id` and `message_id` as the spec names them, snake_case like the request. */
export function serializeEmail(email: EmailRecord, recipients: readonly RecipientRecord[]) {
  return {
    _id: email.id,
    message_id: email.messageId,
    object: 'email' as const,
    status: email.status,
    from: email.fromName ? `${email.fromName} <${email.fromEmail}>` : email.fromEmail,
    subject: email.subject,
    reply_to: email.replyTo ?? null,
    scheduled_at: iso(email.scheduledAt),
    recipients: recipients.map((r) => ({
      email: r.email,
      kind: r.kind,
      status: r.status,
      attempts: r.attempts,
      last_response: r.lastResponse ?? null,
      bounce_type: r.bounceType ?? null,
      next_attempt_at: iso(r.nextAttemptAt),
      updated_at: r.updatedAt.toISOString(),
    })),
    template_id: email.templateId ?? null,
    template_version: email.templateVersion ?? null,
    tags: email.tags,
    stream: email.stream,
    tracking: { opens: email.trackOpens, clicks: email.trackClicks },
    attachments: email.attachments.map((a) => ({
      filename: a.filename,
      content_type: a.content_type,
      size_bytes: a.size_bytes,
      content_id: a.content_id,
      attachment_id: a.attachment_id,
    })),
    credits_charged: email.creditsCharged + email.overageCharged,
    last_error: email.lastError ?? null,
    created_at: email.createdAt.toISOString(),
    updated_at: email.updatedAt.toISOString(),
    sent_at: iso(email.sentAt),
    cancelled_at: iso(email.cancelledAt),
  };
}

/** One event of an email's timeline. */
export function serializeEmailEvent(event: EmailEventView) {
  return { type: event.type, recipient: event.recipient, occurred_at: event.occurredAt.toISOString() };
}
