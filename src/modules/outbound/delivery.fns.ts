import type { EmailRecipient, EmailStatus, TransactionalEmail } from '../../../db/entities/index.ts';
import type { HandoffResult } from '../sends/handoff.repo.ts';
import type { SendRecipient } from './delivery.types.ts';
import type { RecipientOutcome } from './outcomes.ts';
import type { RelayRecipientResult, RelayResult } from './relay.ts';

/** Recipient statuses still waiting for an attempt. */
export const PENDING = ['queued', 'deferred'] as const;
/** Recipient statuses the relay took the message for (credits stay charged). */
export const HANDED_OFF = new Set(['sent', 'delivered', 'bounced', 'complained']);
export const isPending = (status: string) => (PENDING as readonly string[]).includes(status);
export const isInline = (blobKey: string | null, attachmentId: string | null) => blobKey !== null && attachmentId === null;

/** Whether the relay accepted the message for every recipient it was sent to. */
export function acceptedByAll(
  result: RelayResult,
  pending: readonly SendRecipient[],
): result is Extract<RelayResult, { kind: 'recipients' }> {
  return (
    result.kind === 'recipients' && result.recipients.length === pending.length && result.recipients.every((answer) => answer.accepted)
  );
}

/** Marks the email settled (and off its domain's queue) when no recipient is pending; returns its status. */
export function settle(email: TransactionalEmail, recipients: EmailRecipient[], now: Date): EmailStatus {
  if (recipients.some((r) => isPending(r.status))) return email.status;
  const handedOff = recipients.some((r) => r.status === 'sent' || r.status === 'delivered' || r.status === 'complained');
  email.status = handedOff ? 'sent' : 'failed';
  email.settledAt = now;
  email.nextAttemptAt = null;
  return email.status;
}

/**
 * One recipient's answer from the relay: sent, a hard bounce (5xx), a deferral, or held back by
 * Herald's own destination shaping (once no retry remains, a hold is a deferral like any other
 * and the email then expires).
 */
function recipientOutcome(answer: RelayRecipientResult, nextAttemptAt: Date | null, finalHop: boolean): RecipientOutcome {
  if (!answer.accepted && answer.heldMs !== undefined && nextAttemptAt !== null) {
    return {
      type: 'held',
      response: answer.response ?? 'held back by destination shaping',
      nextAttemptAt: new Date(Date.now() + answer.heldMs),
    };
  }
  if (answer.accepted) return { type: 'sent', response: answer.response, delivered: finalHop };
  if ((answer.code ?? 400) >= 500) return { type: 'bounced', bounceType: 'hard', response: answer.response, code: answer.code };
  return { type: 'deferred', response: answer.response ?? 'temporary failure', code: answer.code, nextAttemptAt };
}

/**
 * What the relay's answer means for each pending recipient, by address: per-recipient answers
 * as they came; a refused message or an unreachable relay fails everyone (a permanent refusal)
 * or defers everyone.
 */
export function outcomesOf(
  result: RelayResult,
  pending: readonly SendRecipient[],
  nextAttemptAt: Date | null,
  finalHop: boolean,
): Map<string, RecipientOutcome> {
  const outcomes = new Map<string, RecipientOutcome>();
  if (result.kind === 'recipients') {
    for (const answer of result.recipients) outcomes.set(answer.email, recipientOutcome(answer, nextAttemptAt, finalHop));
    return outcomes;
  }
  for (const recipient of pending) {
    if (result.kind === 'message_refused' && result.permanent) {
      outcomes.set(recipient.email, { type: 'failed', reason: `provider_rejected: ${result.response}` });
    } else {
      outcomes.set(recipient.email, {
        type: 'deferred',
        response: result.response,
        code: result.kind === 'message_refused' ? result.code : null,
        nextAttemptAt,
      });
    }
  }
  return outcomes;
}

/** The hand-off answer of a recorded attempt (what SEND_HANDOFF_WAIT_MS callers see). */
export function handoffOf(result: RelayResult, status: EmailStatus, rejectedOutright: boolean): HandoffResult {
  const anyAccepted = result.kind === 'recipients' && result.recipients.some((r) => r.accepted || (r.code ?? 0) >= 500);
  if (rejectedOutright) return { outcome: 'rejected', response: result.response };
  if (anyAccepted || status !== 'sending') return { outcome: 'accepted', response: result.response };
  return { outcome: 'deferred', response: result.response };
}
