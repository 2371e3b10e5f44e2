import type { MikroORM } from '@mikro-orm/postgresql';
import { newId } from '../../../db/ids.ts';
import { queryPrepared } from '../../../db/prepared.ts';
import { createGroupCommit } from '../../queue/group-commit.ts';
import { isSubscribed } from '../events/events.fns.ts';
import { findSubscribedEventTypes } from '../events/webhook-subscriptions.repo.ts';
import { emailEventData } from './outcomes.ts';
import { sentRecordsStatement, type SentRecipientRow } from './sent-record.repo.ts';

/** An attempt the relay accepted for every recipient it was for: the common case, recorded in groups. */
export interface AcceptedAttempt {
  orgId: string;
  email: { id: string; messageId: string; fromEmail: string; subject: string; domain: string; broadcastId: string | null };
  /** The recipients of this attempt (queued or deferred before it) with the relay's answer. */
  recipients: { id: string; email: string; response: string | null }[];
  /** The relay was the final hop (SMTP_RELAY_FINAL_HOP, direct delivery, the sandbox): accepted means delivered. */
  delivered: boolean;
  at: Date;
}

/** Attempts per statement, and how long the first of a group waits for company. */
const GROUP_MAX = 64;
const GROUP_DELAY_MS = 2;

/** The rows of `attempt`'s recipients, with their events' ids and data where `subscribed` has an endpoint for them. */
function recipientRows(attempt: AcceptedAttempt, subscribed: ReadonlyMap<string, ReadonlySet<string>>): SentRecipientRow[] {
  const at = attempt.at.toISOString();
  const publishSent = isSubscribed(subscribed, attempt.orgId, 'email.sent');
  const publishDelivered = attempt.delivered && isSubscribed(subscribed, attempt.orgId, 'email.delivered');
  return attempt.recipients.map((recipient) => {
    const data = publishSent || publishDelivered ? emailEventData(attempt.email, recipient.email, attempt.at) : null;
    return {
      id: recipient.id,
      orgId: attempt.orgId,
      emailId: attempt.email.id,
      status: attempt.delivered ? 'delivered' : 'sent',
      response: recipient.response?.slice(0, 1024) ?? null,
      at,
      day: at.slice(0, 10),
      recipient: recipient.email,
      domain: attempt.email.domain.toLowerCase(),
      broadcastId: attempt.email.broadcastId,
      sentFactId: newId(),
      deliveredFactId: newId(),
      sentEventId: publishSent ? newId() : null,
      sentEventData: publishSent ? JSON.stringify(data) : null,
      deliveredEventId: publishDelivered ? newId() : null,
      deliveredEventData: publishDelivered ? JSON.stringify({ ...data, smtp_response: recipient.response }) : null,
    };
  });
}

/**
 * Records accepted attempts in group commits: per group one read of the workspaces' webhook
 * subscriptions, then one statement (sent-record.repo.ts) that writes the recipient rows, the
 * email_events rows with their daily rollup and the subscribed email.sent/email.delivered
 * events for the rows it changed, and settles the email rows as sent, instead of a transaction
 * per email. Each caller's promise resolves once its attempt is committed, so a drain puts
 * nothing off the queue that is not recorded; a crash before the commit leaves the email
 * claimed until its lease lapses, and the next attempt finds its recipients still pending (the
 * documented at-least-once window, with the same Message-ID). The recipient update is guarded on
 * the pending states and events are written only for rows it changed.
 */
export function createSentRecorder(deps: { orm: MikroORM }) {
  async function write(attempts: AcceptedAttempt[]): Promise<void> {
    // email.sent / email.delivered only where an endpoint will receive them (most of the
    // rows a broadcast writes otherwise: two events per message that nobody reads).
    const subscribed = await findSubscribedEventTypes(
      deps.orm.em,
      attempts.map((a) => a.orgId),
    );
    const recipients = attempts.flatMap((attempt) => recipientRows(attempt, subscribed));
    const emails = attempts.map((a) => ({ id: a.email.id, orgId: a.orgId, at: a.at.toISOString() }));
    await queryPrepared(deps.orm.em, sentRecordsStatement(recipients, emails));
  }

  const group = createGroupCommit(write, { maxItems: GROUP_MAX, delayMs: GROUP_DELAY_MS });
  return {
    /** Resolves when the attempt is committed (its email settled as sent). */
    record: (attempt: AcceptedAttempt): Promise<void> => group.add(attempt),
  };
}

export type SentRecorder = ReturnType<typeof createSentRecorder>;
