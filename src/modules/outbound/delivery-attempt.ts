import type Mail from 'nodemailer/lib/mailer/index.js';
import type { Config } from '../../config.ts';
import { sendStepDuration } from '../../metrics/metrics.ts';
import type { Egress, EgressChoice } from '../egress/egress.ts';
import { acceptedByAll, handoffOf, HANDED_OFF, isPending, outcomesOf } from './delivery.fns.ts';
import { afterSettled, failBuild, recordOutcomes, type DeliveryStore } from './delivery-records.ts';
import type { AttemptedEmail, DeliverResult, SendRecipient } from './delivery.types.ts';
import { BuildFailure, type MessageBuilder } from './message-builder.ts';
import type { Relay, RelayResult } from './relay.ts';
import type { SentRecorder } from './sent-recorder.ts';
import type { RecipientOutcome } from './outcomes.ts';

/** What an attempt uses: the store, the message builder, the relays and the optional recorder, egress and heartbeat. */
export interface AttemptContext extends DeliveryStore {
  config: Pick<Config, 'sends'>;
  builder: MessageBuilder;
  /** The signed (VERP) return path of an email sent from `domain`. */
  returnPath: (emailId: string, domain: string) => string;
  relay: Relay;
  sandboxRelay: Relay;
  heartbeat?: (() => void) | undefined;
  recorder?: SentRecorder | undefined;
  egress?: Egress | null | undefined;
}

type SendingSource = Exclude<EgressChoice, { kind: 'held' }>;

/** Where the attempt leaves from: the default route, an egress pool address, or held for today (never for sandbox mail). */
function chooseSource(ctx: AttemptContext, orgId: string, email: AttemptedEmail, count: number): Promise<EgressChoice> | EgressChoice {
  const { egress } = ctx;
  if (!egress?.enabled || email.sandbox) return { kind: 'default' };
  return egress.choose(orgId, email.domain, count, email.stream ?? (email.broadcastId ? 'broadcast' : 'transactional'));
}

/** One SMTP transaction for the pending recipients, heartbeating while it runs. */
async function relayMessage(
  ctx: AttemptContext,
  email: AttemptedEmail,
  message: Mail.Options,
  pending: readonly SendRecipient[],
  source: SendingSource,
): Promise<RelayResult> {
  const beat = ctx.heartbeat ? setInterval(ctx.heartbeat, 2_000) : null;
  const relayed = sendStepDuration.startTimer({ step: 'relay' });
  try {
    // A test key's email never reaches a real relay, whatever else is configured.
    const relay = email.sandbox ? ctx.sandboxRelay : ctx.relay;
    const envelope = { from: ctx.returnPath(email.id, email.domain), to: pending.map((r) => r.email) };
    return source.kind === 'address' && ctx.egress ? await ctx.egress.send(source, message, envelope) : await relay.send(message, envelope);
  } finally {
    relayed();
    if (beat) clearInterval(beat);
  }
}

/** Records an attempt the relay accepted whole through the group-commit recorder. */
async function recordAcceptedWhole(
  ctx: AttemptContext & { recorder: SentRecorder },
  orgId: string,
  email: AttemptedEmail,
  pending: readonly SendRecipient[],
  result: Extract<RelayResult, { kind: 'recipients' }>,
  finalHop: boolean,
): Promise<DeliverResult> {
  const byEmail = new Map(result.recipients.map((answer) => [answer.email, answer.response]));
  await ctx.recorder.record({
    orgId,
    email: {
      id: email.id,
      messageId: email.messageId,
      fromEmail: email.fromEmail,
      subject: email.subject,
      domain: email.domain,
      broadcastId: email.broadcastId ?? null,
    },
    recipients: pending.map((r) => ({ id: r.id, email: r.email, response: byEmail.get(r.email) ?? null })),
    delivered: finalHop,
    at: new Date(),
  });
  await afterSettled(ctx, orgId, email.attachments);
  return { status: 'sent', handoff: { outcome: 'accepted', response: result.response } };
}

/** Records the relay's answer: the group-commit recorder for an attempt accepted whole, else one transaction. */
async function recordAttempt(
  ctx: AttemptContext,
  orgId: string,
  email: AttemptedEmail,
  recipients: readonly SendRecipient[],
  pending: readonly SendRecipient[],
  result: RelayResult,
  nextDelayMs: number | null,
): Promise<DeliverResult> {
  const finalHop = email.sandbox || ctx.config.sends.relayIsFinalHop;
  const { recorder } = ctx;
  if (recorder && acceptedByAll(result, pending)) return recordAcceptedWhole({ ...ctx, recorder }, orgId, email, pending, result, finalHop);
  const nextAttemptAt = nextDelayMs === null ? null : new Date(Date.now() + nextDelayMs);
  const firstAttempt = !recipients.some((r) => HANDED_OFF.has(r.status));
  const rejectedOutright = result.kind === 'message_refused' && result.permanent && firstAttempt;
  const outcomes = outcomesOf(result, pending, nextAttemptAt, finalHop);
  const status = await recordOutcomes(ctx, orgId, email.id, result, outcomes, rejectedOutright);
  if (status !== 'sending') await afterSettled(ctx, orgId, email.attachments);
  const holds = [...outcomes.values()].filter((o): o is Extract<RecipientOutcome, { type: 'held' }> => o.type === 'held');
  // Every recipient held back by shaping: not an attempt, due again when its destination may take it.
  if (status === 'sending' && holds.length > 0 && holds.length === outcomes.size) {
    const heldUntil = new Date(Math.min(...holds.map((o) => o.nextAttemptAt.getTime())));
    return { status, handoff: { outcome: 'deferred', response: result.response }, heldUntil, heldWithinWindow: true };
  }
  return { status, handoff: handoffOf(result, status, rejectedOutright) };
}

/** One attempt: builds the message, sends it to the pending recipients and records the answers. */
export async function attemptDelivery(
  ctx: AttemptContext,
  orgId: string,
  email: AttemptedEmail,
  recipients: readonly SendRecipient[],
  nextDelayMs: number | null,
): Promise<DeliverResult> {
  const pending = recipients.filter((r) => isPending(r.status));
  const source = await chooseSource(ctx, orgId, email, pending.length);
  if (source.kind === 'held')
    return { status: 'sending', handoff: { outcome: 'deferred', response: source.reason }, heldUntil: source.until };
  let message: Mail.Options;
  const built = sendStepDuration.startTimer({ step: 'build' });
  try {
    message = await ctx.builder.build(email, recipients);
  } catch (error) {
    if (!(error instanceof BuildFailure)) throw error;
    return failBuild(ctx, orgId, email, recipients, error);
  } finally {
    built();
  }
  const result = await relayMessage(ctx, email, message, pending, source);
  const recorded = sendStepDuration.startTimer({ step: 'record' });
  try {
    return await recordAttempt(ctx, orgId, email, recipients, pending, result, nextDelayMs);
  } finally {
    recorded();
  }
}
