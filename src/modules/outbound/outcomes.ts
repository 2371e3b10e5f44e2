import type { EntityManager } from '@mikro-orm/postgresql';
import {
  Contact,
  type ContactStatus,
  type EmailEventType,
  type EmailRecipient,
  type RecipientStatus,
  type TransactionalEmail,
} from '../../../db/entities/index.ts';
import { serializeContact } from '../contacts/contacts.serializer.ts';
import type { EventType } from '../events/events.schemas.ts';
import { recordEvent } from '../events/events.fns.ts';
import type { EmailEventInput } from '../metrics/email-events.ts';
import { suppressAddress } from '../sends/suppression.repo.ts';

/**
 * What happened to one recipient of one transactional email, as the relay, a DSN or a
 * feedback report told Herald. applyRecipientOutcome writes all of its consequences in the
 * caller's transaction: the recipient row, the email event GET /metrics counts, the webhook
 * event, and for hard bounces and complaints the suppression and the contact's status.
 */
export type RecipientOutcome =
  | { type: 'sent'; response: string | null; delivered: boolean }
  | { type: 'delivered'; response: string | null }
  | { type: 'deferred'; response: string; code: number | null; nextAttemptAt: Date | null }
  /** Held back by Herald's own per-destination shaping: no server asked, so no attempt, no event; only why and when next. */
  | { type: 'held'; response: string; nextAttemptAt: Date }
  | { type: 'bounced'; bounceType: 'hard' | 'soft'; response: string | null; code: number | null }
  | { type: 'complained'; feedbackType: string | null }
  | { type: 'failed'; reason: string };

const CONTACT_STATUS_AFTER: Partial<Record<RecipientOutcome['type'], { status: ContactStatus; event: EventType }>> = {
  bounced: { status: 'bounced', event: 'contact.bounced' },
  complained: { status: 'complained', event: 'contact.complained' },
};

/** What every email.* event of a transactional email says about one recipient. */
export function emailEventData(
  email: Pick<TransactionalEmail, 'id' | 'messageId' | 'fromEmail' | 'subject'> & { broadcastId?: string | null },
  recipient: string,
  at: Date,
) {
  return {
    email_id: email.id,
    message_id: email.messageId,
    broadcast_id: email.broadcastId ?? null,
    from: email.fromEmail,
    recipient,
    subject: email.subject,
    occurred_at: at.toISOString(),
  };
}

/** Moves the workspace's contact with this address (if any) to `status`, emitting its events; a contact already there is left alone. */
export async function moveContact(em: EntityManager, orgId: string, email: string, status: ContactStatus, event: EventType): Promise<void> {
  const contact = await em.findOne(Contact, { email });
  if (!contact || contact.status === status) return;
  // A complaint outranks a bounce; a bounce does not overwrite a complaint or an unsubscribe.
  if (status === 'bounced' && contact.status !== 'active') return;
  const previous = contact.status;
  contact.status = status;
  await em.flush();
  recordEvent(em, orgId, 'contact.updated', { contact: serializeContact(contact), changed_fields: ['status'] });
  recordEvent(em, orgId, event, { contact: serializeContact(contact), previous_status: previous });
}

/** Recipient statuses after which nothing but a complaint or a late DSN can change the row. */
export const SETTLED_RECIPIENT_STATUSES: readonly RecipientStatus[] = ['sent', 'delivered', 'bounced', 'complained', 'failed', 'cancelled'];

/**
 * Records one outcome for one recipient row (in the caller's transaction, `em` scoped to the
 * workspace). The recipient and email rows must be managed by `em`. The email events for
 * GET /metrics are added to `metrics`: the caller writes them with recordEmailEvents as the
 * last statement of its transaction, because their daily rollup rows are shared by every
 * email of a domain and stay locked until the commit.
 */
export async function applyRecipientOutcome(
  em: EntityManager,
  email: TransactionalEmail,
  recipient: EmailRecipient,
  outcome: RecipientOutcome,
  metrics: EmailEventInput[],
  at: Date = new Date(),
): Promise<void> {
  const data = emailEventData(email, recipient.email, at);
  const metric = (type: EmailEventType) =>
    metrics.push({
      orgId: email.orgId,
      type,
      recipient: recipient.email,
      domain: email.domain,
      emailId: email.id,
      broadcastId: email.broadcastId,
      occurredAt: at,
    });
  switch (outcome.type) {
    case 'sent':
      recipient.status = outcome.delivered ? 'delivered' : 'sent';
      recipient.sentAt = at;
      recipient.lastResponse = outcome.response?.slice(0, 1024) ?? null;
      recipient.nextAttemptAt = null;
      metric('sent');
      recordEvent(em, email.orgId, 'email.sent', data);
      if (outcome.delivered) {
        metric('delivered');
        recordEvent(em, email.orgId, 'email.delivered', { ...data, smtp_response: outcome.response });
      }
      break;
    case 'delivered':
      recipient.status = 'delivered';
      metric('delivered');
      recordEvent(em, email.orgId, 'email.delivered', { ...data, smtp_response: outcome.response });
      break;
    case 'deferred':
      recipient.status = 'deferred';
      recipient.lastResponse = outcome.response.slice(0, 1024);
      recipient.lastResponseCode = outcome.code;
      recipient.nextAttemptAt = outcome.nextAttemptAt;
      metric('deferred');
      recordEvent(em, email.orgId, 'email.deferred', {
        ...data,
        reason: outcome.response,
        next_attempt_at: outcome.nextAttemptAt?.toISOString() ?? null,
      });
      break;
    case 'held':
      recipient.lastResponse = outcome.response.slice(0, 1024);
      recipient.nextAttemptAt = outcome.nextAttemptAt;
      break;
    case 'bounced':
      recipient.status = 'bounced';
      recipient.bounceType = outcome.bounceType;
      recipient.lastResponse = outcome.response?.slice(0, 1024) ?? null;
      recipient.lastResponseCode = outcome.code;
      recipient.nextAttemptAt = null;
      metric('bounced');
      recordEvent(em, email.orgId, 'email.bounced', { ...data, bounce_type: outcome.bounceType, diagnostic: outcome.response });
      if (outcome.bounceType === 'hard') {
        await suppressAddress(em, email.orgId, recipient.email, 'hard_bounce', { emailId: email.id, detail: outcome.response });
      }
      break;
    case 'complained':
      recipient.status = 'complained';
      metric('complained');
      recordEvent(em, email.orgId, 'email.complained', { ...data, feedback_type: outcome.feedbackType });
      await suppressAddress(em, email.orgId, recipient.email, 'complaint', { emailId: email.id, detail: outcome.feedbackType });
      break;
    case 'failed':
      recipient.status = 'failed';
      recipient.lastResponse = outcome.reason.slice(0, 1024);
      recipient.nextAttemptAt = null;
      metric('failed');
      recordEvent(em, email.orgId, 'email.failed', { ...data, reason: outcome.reason });
      break;
  }
  const contactMove = outcome.type === 'bounced' && outcome.bounceType !== 'hard' ? undefined : CONTACT_STATUS_AFTER[outcome.type];
  if (contactMove) await moveContact(em, email.orgId, recipient.email, contactMove.status, contactMove.event);
  await em.flush();
}
