import type { MikroORM } from '@mikro-orm/postgresql';
import type Mail from 'nodemailer/lib/mailer/index.js';
import {
  AttachmentUpload,
  type EmailAttachmentRecord,
  EmailRecipient,
  type EmailStatus,
  type RecipientKind,
  type RecipientStatus,
  TransactionalEmail,
} from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { BlobStore } from '../../blob/blob-store.ts';
import type { Config } from '../../config.ts';
import { sendStepDuration } from '../../metrics/metrics.ts';
import { recordEmailEvents, type EmailEventInput } from '../metrics/email-events.ts';
import { applyRecipientOutcome, type RecipientOutcome } from './outcomes.ts';
import { releaseEmailQuota } from '../sends/quota.repo.ts';
import type { Relay, RelayResult } from './relay.ts';
import type { HandoffResult } from '../sends/handoff.repo.ts';
import { BuildFailure, createMessageBuilder, type MessageSource } from './message-builder.ts';
import type { SentRecorder } from './sent-recorder.ts';
import { bounceHostOf } from '../sends/sends.fns.ts';
import { createVerpSigner } from './verp.ts';
import type { Egress } from '../egress/egress.ts';

export interface DeliverInput {
  orgId: string;
  emailId: string;
  attempt: number;
  /** When deferred recipients will be tried next (for email.deferred), or null if never. */
  nextDelayMs: number | null;
}

export interface DeliverResult {
  /** `sending` while deferred recipients remain. */
  status: EmailStatus;
  handoff: HandoffResult;
  /** Not attempted: its egress pool has no room today, or shaping held every recipient back; due again then (no attempt, no event). */
  heldUntil?: Date;
  /** The hold is shaping's: it ends no later than the email's retry window (an egress pool's waits for its day whatever the window). */
  heldWithinWindow?: boolean;
}

export interface EmailDeliveryDeps {
  orm: MikroORM;
  blobs: BlobStore | null;
  relay: Relay;
  /** Where sandbox emails (accepted with a test key) go instead: never a real relay (src/modules/sandbox/). */
  sandboxRelay: Relay;
  config: Pick<Config, 'bounceDomain' | 'encryptionKey' | 'encryptionKeys' | 'sends'>;
  /** Called while the relay conversation runs (the activity heartbeats). */
  heartbeat?: () => void;
  /** Records attempts the relay accepted whole in group commits (the domain drain's fast path). */
  recorder?: SentRecorder;
  /** Egress IP pools (src/modules/egress/): the source address each non-sandbox delivery leaves from. */
  egress?: Egress | null;
}

/** An email as an attempt sees it. */
type AttemptedEmail = MessageSource & { domain: string; broadcastId?: string | null; sandbox: boolean; stream?: string };

/** A recipient of an email as an attempt sees it. */
export interface SendRecipient {
  id: string;
  email: string;
  kind: RecipientKind;
  status: RecipientStatus;
}

/** An email a drain claimed (status sending, attempt counted): everything an attempt needs. */
export interface ClaimedSend extends MessageSource {
  orgId: string;
  domain: string;
  /** Set for a broadcast's message (its events count for the broadcast). */
  broadcastId: string | null;
  /** Accepted with a test key: goes to the sandbox relay, the final hop. */
  sandbox: boolean;
  /** Its message stream (an egress pool may be chosen per stream). */
  stream?: string;
  /** This attempt's number. */
  handoffAttempts: number;
  recipients: SendRecipient[];
}

const PENDING = ['queued', 'deferred'] as const;
const HANDED_OFF = new Set(['sent', 'delivered', 'bounced', 'complained']);
const isPending = (status: string) => (PENDING as readonly string[]).includes(status);
const isInline = (blobKey: string | null, attachmentId: string | null) => blobKey !== null && attachmentId === null;

/** Whether the relay accepted the message for every recipient it was sent to. */
function acceptedByAll(result: RelayResult, pending: readonly SendRecipient[]): result is Extract<RelayResult, { kind: 'recipients' }> {
  return (
    result.kind === 'recipients' && result.recipients.length === pending.length && result.recipients.every((answer) => answer.accepted)
  );
}

/**
 * Delivery attempts of transactional emails, made by the domain drain (domain-drain.ts). An
 * attempt sends one SMTP transaction to the relay for the recipients not yet settled and
 * records each answer before returning, so a retry after a crash never sends to a recorded
 * recipient again. The only window for a duplicate is a crash
 * between the relay's 250 and the commit of its record; the Message-ID stays the same, so
 * receivers can deduplicate. An attempt the relay accepts whole (the common case) is recorded
 * by the group-commit recorder when one is given; anything else (a refusal, a deferral, a
 * bounce, a message that cannot be built) through applyRecipientOutcome, one transaction.
 */
export function createEmailDelivery(deps: EmailDeliveryDeps) {
  const { orm, config } = deps;
  const builder = createMessageBuilder({ orm, blobs: deps.blobs, config });
  // Without HERALD_ENCRYPTION_KEY nothing is built (no DKIM key), so no return path is needed.
  const verp = config.encryptionKey ? createVerpSigner(config.encryptionKey) : null;
  const returnPath = (emailId: string, domain: string): string => {
    if (!verp) throw new BuildFailure('HERALD_ENCRYPTION_KEY is not set: the return path cannot be signed');
    return verp.address(emailId, bounceHostOf(domain));
  };

  /** Marks the email settled (and off its domain's queue) when no recipient is pending; returns its status. */
  function settle(email: TransactionalEmail, recipients: EmailRecipient[], now: Date): EmailStatus {
    if (recipients.some((r) => isPending(r.status))) return email.status;
    const handedOff = recipients.some((r) => r.status === 'sent' || r.status === 'delivered' || r.status === 'complained');
    email.status = handedOff ? 'sent' : 'failed';
    email.settledAt = now;
    email.nextAttemptAt = null;
    return email.status;
  }

  /** After the email settled: transient inline bytes go, stored uploads count as used now. */
  async function afterSettled(orgId: string, attachments: readonly EmailAttachmentRecord[]): Promise<void> {
    if (attachments.length === 0) return;
    const uploadIds = attachments.flatMap((a) => (a.attachment_id ? [a.attachment_id] : []));
    if (uploadIds.length > 0)
      await scopeToOrg(orm.em, orgId).nativeUpdate(AttachmentUpload, { id: { $in: uploadIds } }, { referencedAt: new Date() });
    if (!deps.blobs) return;
    for (const record of attachments) {
      if (isInline(record.blob_key, record.attachment_id)) await deps.blobs.delete(record.blob_key as string);
    }
  }

  function outcomesOf(
    result: RelayResult,
    pending: readonly SendRecipient[],
    nextAttemptAt: Date | null,
    finalHop: boolean,
  ): Map<string, RecipientOutcome> {
    const outcomes = new Map<string, RecipientOutcome>();
    if (result.kind === 'recipients') {
      for (const answer of result.recipients) {
        // Held back by Herald's own shaping; once no retry remains it is a deferral like any other (the email then expires).
        if (!answer.accepted && answer.heldMs !== undefined && nextAttemptAt !== null) {
          const response = answer.response ?? 'held back by destination shaping';
          outcomes.set(answer.email, { type: 'held', response, nextAttemptAt: new Date(Date.now() + answer.heldMs) });
        } else if (answer.accepted) {
          outcomes.set(answer.email, { type: 'sent', response: answer.response, delivered: finalHop });
        } else if ((answer.code ?? 400) >= 500) {
          outcomes.set(answer.email, { type: 'bounced', bounceType: 'hard', response: answer.response, code: answer.code });
        } else {
          outcomes.set(answer.email, {
            type: 'deferred',
            response: answer.response ?? 'temporary failure',
            code: answer.code,
            nextAttemptAt,
          });
        }
      }
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

  /** The email cannot be built: its pending recipients fail (credits back when nothing was ever handed off). */
  async function failBuild(
    orgId: string,
    email: MessageSource,
    recipients: readonly SendRecipient[],
    error: BuildFailure,
  ): Promise<DeliverResult> {
    const everHandedOff = recipients.some((r) => HANDED_OFF.has(r.status));
    const now = new Date();
    await scopeToOrg(orm.em, orgId).transactional(async (tx) => {
      const row = await tx.findOneOrFail(TransactionalEmail, { id: email.id });
      const rows = await tx.find(EmailRecipient, { emailId: email.id, status: { $in: [...PENDING] } });
      const metrics: EmailEventInput[] = [];
      for (const recipient of rows) await applyRecipientOutcome(tx, row, recipient, { type: 'failed', reason: error.message }, metrics);
      if (!everHandedOff) await releaseEmailQuota(tx, row);
      row.lastError = error.message;
      row.status = everHandedOff ? 'sent' : 'failed';
      row.settledAt = now;
      row.nextAttemptAt = null;
      await tx.flush();
      await recordEmailEvents(tx, metrics);
    });
    await afterSettled(orgId, email.attachments);
    return { status: everHandedOff ? 'sent' : 'failed', handoff: { outcome: 'rejected', response: error.message } };
  }

  /** Records what the relay answered, one transaction through applyRecipientOutcome; the email's status after it. */
  async function recordOutcomes(
    orgId: string,
    emailId: string,
    result: RelayResult,
    outcomes: Map<string, RecipientOutcome>,
    releaseQuota: boolean,
  ): Promise<EmailStatus> {
    const now = new Date();
    return scopeToOrg(orm.em, orgId).transactional(async (tx) => {
      const row = await tx.findOneOrFail(TransactionalEmail, { id: emailId });
      const rows = await tx.find(EmailRecipient, { emailId }, { orderBy: { id: 'asc' } });
      const metrics: EmailEventInput[] = [];
      for (const recipient of rows) {
        const outcome = outcomes.get(recipient.email);
        if (!outcome || !isPending(recipient.status)) continue;
        if (outcome.type !== 'held') recipient.attempts += 1;
        await applyRecipientOutcome(tx, row, recipient, outcome, metrics);
      }
      if (releaseQuota) await releaseEmailQuota(tx, row);
      if (result.kind !== 'recipients') row.lastError = result.response.slice(0, 1024);
      if (rows.some((r) => r.status === 'sent' || r.status === 'delivered')) row.sentAt ??= now;
      const settled = settle(row, rows, now);
      await tx.flush();
      await recordEmailEvents(tx, metrics);
      return settled;
    });
  }

  /** Builds, sends to the pending recipients and records the answers. */
  async function attempt(
    orgId: string,
    email: AttemptedEmail,
    recipients: readonly SendRecipient[],
    nextDelayMs: number | null,
  ): Promise<DeliverResult> {
    const pending = recipients.filter((r) => isPending(r.status));
    const { egress } = deps;
    const source =
      egress?.enabled && !email.sandbox
        ? await egress.choose(orgId, email.domain, pending.length, email.stream ?? (email.broadcastId ? 'broadcast' : 'transactional'))
        : ({ kind: 'default' } as const);
    if (source.kind === 'held')
      return { status: 'sending', handoff: { outcome: 'deferred', response: source.reason }, heldUntil: source.until };
    let message: Mail.Options;
    const built = sendStepDuration.startTimer({ step: 'build' });
    try {
      message = await builder.build(email, recipients);
    } catch (error) {
      if (!(error instanceof BuildFailure)) throw error;
      return failBuild(orgId, email, recipients, error);
    } finally {
      built();
    }
    const beat = deps.heartbeat ? setInterval(deps.heartbeat, 2_000) : null;
    const relayed = sendStepDuration.startTimer({ step: 'relay' });
    let result: RelayResult;
    try {
      // A test key's email never reaches a real relay, whatever else is configured.
      const relay = email.sandbox ? deps.sandboxRelay : deps.relay;
      const envelope = { from: returnPath(email.id, email.domain), to: pending.map((r) => r.email) };
      result = source.kind === 'address' && egress ? await egress.send(source, message, envelope) : await relay.send(message, envelope);
    } finally {
      relayed();
      if (beat) clearInterval(beat);
    }
    const recorded = sendStepDuration.startTimer({ step: 'record' });
    try {
      return await record(orgId, email, recipients, pending, result, nextDelayMs);
    } finally {
      recorded();
    }
  }

  /** Records the relay's answer: the group-commit recorder for an attempt accepted whole, else one transaction. */
  async function record(
    orgId: string,
    email: AttemptedEmail,
    recipients: readonly SendRecipient[],
    pending: readonly SendRecipient[],
    result: RelayResult,
    nextDelayMs: number | null,
  ): Promise<DeliverResult> {
    const finalHop = email.sandbox || config.sends.relayIsFinalHop;
    if (deps.recorder && acceptedByAll(result, pending)) {
      const byEmail = new Map(result.recipients.map((answer) => [answer.email, answer.response]));
      await deps.recorder.record({
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
      await afterSettled(orgId, email.attachments);
      return { status: 'sent', handoff: { outcome: 'accepted', response: result.response } };
    }
    const nextAttemptAt = nextDelayMs === null ? null : new Date(Date.now() + nextDelayMs);
    const firstAttempt = !recipients.some((r) => HANDED_OFF.has(r.status));
    const rejectedOutright = result.kind === 'message_refused' && result.permanent && firstAttempt;
    const outcomes = outcomesOf(result, pending, nextAttemptAt, finalHop);
    const status = await recordOutcomes(orgId, email.id, result, outcomes, rejectedOutright);
    if (status !== 'sending') await afterSettled(orgId, email.attachments);
    const holds = [...outcomes.values()].filter((o): o is Extract<RecipientOutcome, { type: 'held' }> => o.type === 'held');
    // Every recipient held back by shaping: not an attempt, due again when its destination may take it.
    if (status === 'sending' && holds.length > 0 && holds.length === outcomes.size) {
      const heldUntil = new Date(Math.min(...holds.map((o) => o.nextAttemptAt.getTime())));
      return { status, handoff: { outcome: 'deferred', response: result.response }, heldUntil, heldWithinWindow: true };
    }
    const anyAccepted = result.kind === 'recipients' && result.recipients.some((r) => r.accepted || (r.code ?? 0) >= 500);
    const handoff: HandoffResult = rejectedOutright
      ? { outcome: 'rejected', response: result.response }
      : anyAccepted || status !== 'sending'
        ? { outcome: 'accepted', response: result.response }
        : { outcome: 'deferred', response: result.response };
    return { status, handoff };
  }

  const delivery = {
    /** One delivery attempt of an email by id: claims it (a cancelled or settled email is left alone), then `attempt`. */
    async deliver(input: DeliverInput): Promise<DeliverResult> {
      const em = scopeToOrg(orm.em, input.orgId);
      const claimed = await em.nativeUpdate(
        TransactionalEmail,
        { id: input.emailId, status: { $in: ['scheduled', 'queued', 'sending'] } },
        { status: 'sending', handoffAttempts: input.attempt },
      );
      if (claimed === 0) {
        const email = await em.findOneOrFail(TransactionalEmail, { id: input.emailId });
        const outcome =
          email.status === 'cancelled' ? 'cancelled' : email.status === 'failed' && email.quotaReleased ? 'rejected' : 'accepted';
        return { status: email.status, handoff: { outcome, response: email.lastError ?? null } };
      }
      const email = await em.findOneOrFail(TransactionalEmail, { id: input.emailId });
      const recipients = await em.find(EmailRecipient, { emailId: input.emailId }, { orderBy: { id: 'asc' } });
      if (!recipients.some((r) => isPending(r.status))) {
        const status = settle(email, recipients, new Date());
        await em.flush();
        if (status !== 'sending') await afterSettled(input.orgId, email.attachments);
        return { status, handoff: { outcome: 'accepted', response: null } };
      }
      return attempt(input.orgId, email, recipients, input.nextDelayMs);
    },

    /** One attempt of an email a drain claimed with its rows (no reload). */
    async deliverClaimed(email: ClaimedSend, nextDelayMs: number | null): Promise<DeliverResult> {
      if (!email.recipients.some((r) => isPending(r.status))) {
        return delivery.deliver({ orgId: email.orgId, emailId: email.id, attempt: email.handoffAttempts, nextDelayMs });
      }
      return attempt(email.orgId, email, email.recipients, nextDelayMs);
    },
    /**
     * A broadcast message not sent at its turn (its contact unsubscribed, bounced, complained,
     * was suppressed or deleted; the broadcast was cancelled): its pending recipient is
     * cancelled with the reason, the message leaves the queue, and what it took is given back.
     */
    async skip(input: { orgId: string; emailId: string }, reason: string): Promise<void> {
      const now = new Date();
      await scopeToOrg(orm.em, input.orgId).transactional(async (tx) => {
        const row = await tx.findOneOrFail(TransactionalEmail, { id: input.emailId });
        if (row.status !== 'queued' && row.status !== 'sending' && row.status !== 'scheduled') return;
        const rows = await tx.find(EmailRecipient, { emailId: input.emailId });
        for (const recipient of rows) {
          if (!isPending(recipient.status)) continue;
          recipient.status = 'cancelled';
          recipient.lastResponse = `skipped: ${reason}`;
        }
        if (!rows.some((r) => HANDED_OFF.has(r.status))) await releaseEmailQuota(tx, row);
        row.status = 'cancelled';
        row.lastError = `skipped: ${reason}`;
        row.cancelledAt = now;
        row.settledAt = now;
        row.nextAttemptAt = null;
      });
    },

    /** The retry window closed: every recipient still deferred fails (email.failed); the email settles. */
    async expire(input: { orgId: string; emailId: string }): Promise<{ status: EmailStatus }> {
      const em = scopeToOrg(orm.em, input.orgId);
      const now = new Date();
      const email = await em.transactional(async (tx) => {
        const row = await tx.findOneOrFail(TransactionalEmail, { id: input.emailId });
        const rows = await tx.find(EmailRecipient, { emailId: input.emailId }, { orderBy: { id: 'asc' } });
        const metrics: EmailEventInput[] = [];
        for (const recipient of rows) {
          if (!(PENDING as readonly string[]).includes(recipient.status)) continue;
          await applyRecipientOutcome(
            tx,
            row,
            recipient,
            { type: 'failed', reason: `retries_exhausted: ${recipient.lastResponse ?? 'temporary failures'}` },
            metrics,
          );
        }
        if (!rows.some((r) => HANDED_OFF.has(r.status))) await releaseEmailQuota(tx, row);
        if (row.status === 'sending' || row.status === 'queued' || row.status === 'scheduled') settle(row, rows, now);
        await tx.flush();
        await recordEmailEvents(tx, metrics);
        return row;
      });
      await afterSettled(input.orgId, email.attachments);
      return { status: email.status };
    },
  };
  return delivery;
}

export type EmailDelivery = ReturnType<typeof createEmailDelivery>;
