import type { MikroORM } from '@mikro-orm/postgresql';
import { createGroupCommit } from '../../queue/group-commit.ts';
import { isSubscribed, recordEvent } from '../events/events.fns.ts';
import { findSubscribedEventTypes } from '../events/webhook-subscriptions.repo.ts';
import { recordEmailEvents, type EmailEventInput } from '../metrics/email-events.ts';
import { emailEventData } from './outcomes.ts';
import { markRecipientsSent, settleEmailsSent } from './sent-record.repo.ts';

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

/** Attempts per transaction, and how long the first of a group waits for company. */
const GROUP_MAX = 64;
const GROUP_DELAY_MS = 2;

/**
 * Records accepted attempts in group commits: per group one transaction of six statements
 * (the recipient rows, the email rows settling as sent, the workspaces' webhook subscriptions,
 * the email.sent/email.delivered events for the subscribed types, the email_events rows and
 * their daily rollup) instead of a transaction per
 * email. Each caller's promise resolves once its attempt is committed, so a drain puts
 * nothing off the queue that is not recorded; a crash before the commit leaves the email
 * claimed until its lease lapses, and the next attempt finds its recipients still pending (the
 * documented at-least-once window, with the same Message-ID). The recipient update is guarded on
 * the pending states and events are written only for rows it changed.
 */
export function createSentRecorder(deps: { orm: MikroORM }) {
  async function write(attempts: AcceptedAttempt[]): Promise<void> {
    await deps.orm.em.fork().transactional(async (tx) => {
      const changed: { id: string }[] = [];
      for (const delivered of [true, false]) {
        const recipients = attempts
          .filter((a) => a.delivered === delivered)
          .flatMap((a) =>
            a.recipients.map((r) => ({ id: r.id, orgId: a.orgId, response: r.response?.slice(0, 1024) ?? null, at: a.at.toISOString() })),
          );
        if (recipients.length > 0) changed.push(...(await markRecipientsSent(tx, delivered ? 'delivered' : 'sent', recipients)));
      }
      await settleEmailsSent(
        tx,
        attempts.map((a) => ({ id: a.email.id, orgId: a.orgId, at: a.at.toISOString() })),
      );
      const recorded = new Set(changed.map((row) => row.id));
      // email.sent / email.delivered only where an endpoint will receive them (most of the
      // rows a broadcast writes otherwise: two events per message that nobody reads).
      const subscribed = await findSubscribedEventTypes(
        tx,
        attempts.map((a) => a.orgId),
      );
      const metrics: EmailEventInput[] = [];
      for (const attempt of attempts) {
        for (const recipient of attempt.recipients) {
          if (!recorded.has(recipient.id)) continue;
          const data = emailEventData(attempt.email, recipient.email, attempt.at);
          const metric = {
            orgId: attempt.orgId,
            recipient: recipient.email,
            domain: attempt.email.domain,
            emailId: attempt.email.id,
            broadcastId: attempt.email.broadcastId,
            occurredAt: attempt.at,
          };
          if (isSubscribed(subscribed, attempt.orgId, 'email.sent')) recordEvent(tx, attempt.orgId, 'email.sent', data);
          metrics.push({ ...metric, type: 'sent' });
          if (!attempt.delivered) continue;
          if (isSubscribed(subscribed, attempt.orgId, 'email.delivered'))
            recordEvent(tx, attempt.orgId, 'email.delivered', { ...data, smtp_response: recipient.response });
          metrics.push({ ...metric, type: 'delivered' });
        }
      }
      await recordEmailEvents(tx, metrics);
    });
  }

  const group = createGroupCommit(write, { maxItems: GROUP_MAX, delayMs: GROUP_DELAY_MS });
  return {
    /** Resolves when the attempt is committed (its email settled as sent). */
    record: (attempt: AcceptedAttempt): Promise<void> => group.add(attempt),
  };
}

export type SentRecorder = ReturnType<typeof createSentRecorder>;
