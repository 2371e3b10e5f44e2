/**
 * The contract between the send API and the `sendEmail` workflow (workflows/sends.ts): names,
 * ids, input and the hand-off answer. Workflow code may not import src/, so workflows/sends.ts
 * mirrors these types.
 */
export const SEND_EMAIL_WORKFLOW = 'sendEmail';
/** Update: answers once the first delivery attempt has an outcome (the hand-off). */
export const HANDOFF_UPDATE = 'handoff';
/** Signal: the email was cancelled in the database; stop waiting. */
export const CANCEL_SIGNAL = 'cancel';

export interface SendEmailWorkflowInput {
  orgId: string;
  emailId: string;
  /** ISO time to wait for; null sends at once. */
  scheduledAt: string | null;
  /** Deferred recipients: entry 0 is the first attempt, then delays (the last repeats), ms. */
  retryScheduleMs: number[];
  retryWindowMs: number;
}

/**
 * accepted: the relay took the message for at least one recipient (or all were settled one
 * by one) · deferred: every recipient got a temporary failure or the relay was unreachable;
 * Herald retries · rejected: the relay refused the message itself (5xx at MAIL FROM or DATA):
 * nothing was sent, credits and quota were released · cancelled: cancelled before sending.
 */
export interface HandoffResult {
  outcome: 'accepted' | 'deferred' | 'rejected' | 'cancelled';
  response: string | null;
}

export function sendWorkflowId(emailId: string): string {
  return `email:${emailId}`;
}
