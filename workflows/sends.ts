import {
  allHandlersFinished,
  condition,
  defineSignal,
  defineUpdate,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { HeraldDeliveryStatus } from './search-attributes.ts';

/**
 * Legacy: the per-email workflow of the design before sending-domain actors
 * (workflows/send-domain.ts). Nothing starts it any more; it stays registered so runs started
 * before an upgrade finish: its activities hand the email to its domain's actor and report the
 * row's status (src/modules/sends/legacy-handover.ts). Its code is unchanged so recorded
 * histories replay.
 *
 * Delivery attempts are local activities: they run in the worker that runs the workflow task
 * and are recorded as markers, so a send costs the Temporal server a start and a few workflow
 * tasks instead of a round trip per activity. If the worker dies mid-send, the workflow task
 * times out and another worker runs the attempt again; recipients already recorded are not
 * sent to again. An attempt (one SMTP transaction, up to 25 MB) gets 5 minutes.
 */
const { deliverEmail, expireEmail } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '2 minutes' },
});

export interface SendEmailInput {
  orgId: string;
  emailId: string;
  scheduledAt: string | null;
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

export const SEND_EMAIL_WORKFLOW = 'sendEmail';

export function sendWorkflowId(emailId: string): string {
  return `email:${emailId}`;
}

export const handoffUpdate = defineUpdate<HandoffResult>('handoff');
export const cancelSignal = defineSignal('cancel');

type EmailStatus = 'scheduled' | 'queued' | 'sending' | 'sent' | 'failed' | 'cancelled';

/**
 * sendEmail — id `email:<emailId>`, task queue herald-email, HeraldOrgId / HeraldKind = email /
 * HeraldDeliveryStatus (the email's status). Waits for scheduled_at as a durable timer (a
 * `cancel` signal ends the wait; the database row is the truth, so a lost signal only means
 * the attempt at the scheduled time finds the email cancelled), then makes delivery attempts:
 * each sends to the recipients not yet settled and records their outcomes. Deferred (4xx)
 * recipients are retried after the schedule's delays until the retry window closes, then
 * failed. The `handoff` update answers with the first attempt's outcome, so the API can turn
 * an outright rejection into a 502.
 */
export async function sendEmail(input: SendEmailInput): Promise<{ status: EmailStatus; attempts: number }> {
  let handoff: HandoffResult | null = null;
  let cancelled = false;
  setHandler(handoffUpdate, async () => {
    await condition(() => handoff !== null);
    return handoff as HandoffResult;
  });
  setHandler(cancelSignal, () => {
    cancelled = true;
  });
  const show = (status: EmailStatus) =>
    upsertSearchAttributes([{ key: HeraldDeliveryStatus, value: status }]);

  if (input.scheduledAt !== null) {
    const wait = Date.parse(input.scheduledAt) - Date.now();
    if (wait > 0) await condition(() => cancelled, wait);
  }

  const firstAttemptAt = Date.now();
  let attempt = 1;
  let status: EmailStatus = 'sending';
  for (;;) {
    // The delay before the next attempt, or null when the retry window would close first.
    const schedule = input.retryScheduleMs;
    const delay = schedule.length < 2 ? null : (schedule[Math.min(attempt, schedule.length - 1)] ?? null);
    const nextDelayMs = delay !== null && Date.now() - firstAttemptAt + delay <= input.retryWindowMs ? delay : null;
    const result = await deliverEmail({ orgId: input.orgId, emailId: input.emailId, attempt, nextDelayMs });
    handoff ??= result.handoff;
    status = result.status;
    if (result.status !== 'sending') break;
    if (attempt === 1) show('sending');
    if (nextDelayMs === null) {
      status = (await expireEmail({ orgId: input.orgId, emailId: input.emailId })).status;
      break;
    }
    await sleep(nextDelayMs);
    attempt += 1;
  }
  show(status);
  await condition(allHandlersFinished);
  return { status, attempts: attempt };
}
