import type { Readable } from 'node:stream';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type Mail from 'nodemailer/lib/mailer/index.js';
import {
  AttachmentUpload,
  Domain,
  EmailRecipient,
  type EmailStatus,
  TransactionalEmail,
} from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { BlobNotFoundError, type BlobStore } from '../../blob/blob-store.ts';
import type { Config } from '../../config.ts';
import { decryptSecret } from '../../crypto/secret-box.ts';
import { recordEmailEvents, type EmailEventInput } from '../metrics/email-events.ts';
import { applyRecipientOutcome, type RecipientOutcome } from './outcomes.ts';
import { releaseEmailQuota } from './quota.repo.ts';
import type { Relay, RelayResult } from './relay.ts';
import type { HandoffResult } from './handoff.repo.ts';
import { verpAddress } from './sends.fns.ts';

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
}

export interface EmailDeliveryDeps {
  orm: MikroORM;
  blobs: BlobStore | null;
  relay: Relay;
  config: Pick<Config, 'bounceDomain' | 'encryptionKey' | 'sends'>;
  /** Called while the relay conversation runs (the activity heartbeats). */
  heartbeat?: () => void;
}

const PENDING = ['queued', 'deferred'] as const;
const DKIM_KEY_TTL_MS = 60_000;
const HANDED_OFF = new Set(['sent', 'delivered', 'bounced', 'complained']);
const isInline = (blobKey: string | null, attachmentId: string | null) => blobKey !== null && attachmentId === null;

/** Raised before anything reached the relay: the email cannot be built (missing bytes, no key). */
class BuildFailure extends Error {}

/**
 * Delivery attempts of transactional emails (the activities of workflows/sends.ts). An attempt
 * claims the email (scheduled/queued → sending; a cancelled or settled email is left alone),
 * sends one SMTP transaction to the relay for the recipients not yet settled, and records each
 * answer with applyRecipientOutcome before returning, so a retry after a crash never sends to a
 * recorded recipient again. The only window for a duplicate is a crash between the relay's 250
 * and the commit of its record (milliseconds); the Message-ID stays the same, so receivers can
 * deduplicate.
 */
export function createEmailDelivery(deps: EmailDeliveryDeps) {
  const { orm, config } = deps;
  /** Decrypted DKIM keys by domain id, kept DKIM_KEY_TTL_MS (a rotated key is used within a minute). */
  const signingKeys = new Map<string, { domain: Domain; privateKey: string; until: number }>();

  async function signingKeyOf(em: EntityManager, domainId: string): Promise<{ domain: Domain; privateKey: string }> {
    const cached = signingKeys.get(domainId);
    if (cached && cached.until > Date.now()) return cached;
    const domain = await em.findOneOrFail(Domain, { id: domainId });
    if (!config.encryptionKey) throw new BuildFailure('HERALD_ENCRYPTION_KEY is not set: the DKIM key cannot be read');
    const entry = { domain, privateKey: decryptSecret(config.encryptionKey, domain.dkimPrivateKeyEncrypted), until: Date.now() + DKIM_KEY_TTL_MS };
    if (signingKeys.size >= 10_000) signingKeys.clear();
    signingKeys.set(domainId, entry);
    return entry;
  }

  async function loadForSend(em: EntityManager, emailId: string) {
    const email = await em.findOneOrFail(TransactionalEmail, { id: emailId });
    const recipients = await em.find(EmailRecipient, { emailId }, { orderBy: { id: 'asc' } });
    return { email, recipients };
  }

  async function buildMessage(em: EntityManager, email: TransactionalEmail, recipients: EmailRecipient[]): Promise<Mail.Options> {
    const { domain, privateKey } = await signingKeyOf(em, email.domainId);
    const attachments: Mail.Attachment[] = [];
    for (const record of email.attachments) {
      if (!record.blob_key || !deps.blobs) throw new BuildFailure(`the bytes of attachment ${record.filename} are not available`);
      let content: Readable;
      try {
        content = await deps.blobs.get(record.blob_key);
      } catch (error) {
        if (error instanceof BlobNotFoundError) throw new BuildFailure(`the bytes of attachment ${record.filename} are missing`);
        throw error;
      }
      attachments.push({
        filename: record.filename,
        content,
        ...(record.content_type ? { contentType: record.content_type } : {}),
        ...(record.content_id ? { cid: record.content_id, contentDisposition: 'inline' as const } : {}),
      });
    }
    const byKind = (kind: 'to' | 'cc') => recipients.filter((r) => r.kind === kind).map((r) => r.email);
    const to = byKind('to');
    const cc = byKind('cc');
    return {
      from: { name: email.fromName ?? '', address: email.fromEmail },
      ...(to.length > 0 ? { to } : {}),
      ...(cc.length > 0 ? { cc } : {}),
      subject: email.subject,
      ...(email.html !== null ? { html: email.html } : {}),
      ...(email.text !== null ? { text: email.text } : {}),
      ...(email.replyTo ? { replyTo: email.replyTo } : {}),
      messageId: `<${email.messageId}>`,
      date: email.scheduledAt ?? email.createdAt,
      headers: { ...email.headers, 'X-Herald-Email-Id': email.id },
      attachments,
      dkim: { domainName: domain.domain, keySelector: domain.dkimSelector, privateKey },
      disableFileAccess: true,
      disableUrlAccess: true,
    };
  }

  /** Marks the email settled when no recipient is pending; returns its status. */
  function settle(email: TransactionalEmail, recipients: EmailRecipient[], now: Date): EmailStatus {
    if (recipients.some((r) => (PENDING as readonly string[]).includes(r.status))) return email.status;
    const handedOff = recipients.some((r) => r.status === 'sent' || r.status === 'delivered' || r.status === 'complained');
    email.status = handedOff ? 'sent' : 'failed';
    email.settledAt = now;
    return email.status;
  }

  /** After the email settled: transient inline bytes go, stored uploads count as used now. */
  async function afterSettled(orgId: string, email: TransactionalEmail): Promise<void> {
    const em = scopeToOrg(orm.em, orgId);
    const uploadIds = email.attachments.flatMap((a) => (a.attachment_id ? [a.attachment_id] : []));
    if (uploadIds.length > 0) await em.nativeUpdate(AttachmentUpload, { id: { $in: uploadIds } }, { referencedAt: new Date() });
    if (!deps.blobs) return;
    for (const record of email.attachments) {
      if (isInline(record.blob_key, record.attachment_id)) await deps.blobs.delete(record.blob_key as string);
    }
  }

  function outcomesOf(result: RelayResult, pending: EmailRecipient[], nextAttemptAt: Date | null): Map<string, RecipientOutcome> {
    const outcomes = new Map<string, RecipientOutcome>();
    if (result.kind === 'recipients') {
      for (const answer of result.recipients) {
        if (answer.accepted) {
          outcomes.set(answer.email, { type: 'sent', response: answer.response, delivered: config.sends.relayIsFinalHop });
        } else if ((answer.code ?? 400) >= 500) {
          outcomes.set(answer.email, { type: 'bounced', bounceType: 'hard', response: answer.response, code: answer.code });
        } else {
          outcomes.set(answer.email, { type: 'deferred', response: answer.response ?? 'temporary failure', code: answer.code, nextAttemptAt });
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

  return {
    /** One delivery attempt; see the module comment. */
    async deliver(input: DeliverInput): Promise<DeliverResult> {
      const em = scopeToOrg(orm.em, input.orgId);
      const claimed = await em.nativeUpdate(
        TransactionalEmail,
        { id: input.emailId, status: { $in: ['scheduled', 'queued', 'sending'] } },
        { status: 'sending', handoffAttempts: input.attempt },
      );
      if (claimed === 0) {
        const email = await em.findOneOrFail(TransactionalEmail, { id: input.emailId });
        const outcome = email.status === 'cancelled' ? 'cancelled' : email.status === 'failed' && email.quotaReleased ? 'rejected' : 'accepted';
        return { status: email.status, handoff: { outcome, response: email.lastError ?? null } };
      }
      const { email, recipients } = await loadForSend(em, input.emailId);
      const pending = recipients.filter((r) => (PENDING as readonly string[]).includes(r.status));
      const now = new Date();
      if (pending.length === 0) {
        const status = settle(email, recipients, now);
        await em.flush();
        if (status !== 'sending') await afterSettled(input.orgId, email);
        return { status, handoff: { outcome: 'accepted', response: null } };
      }

      let message: Mail.Options;
      try {
        message = await buildMessage(em, email, recipients);
      } catch (error) {
        if (!(error instanceof BuildFailure)) throw error;
        const everHandedOff = recipients.some((r) => HANDED_OFF.has(r.status));
        await em.transactional(async (tx) => {
          const row = await tx.findOneOrFail(TransactionalEmail, { id: email.id });
          const rows = await tx.find(EmailRecipient, { emailId: email.id, status: { $in: [...PENDING] } });
          const metrics: EmailEventInput[] = [];
          for (const recipient of rows) await applyRecipientOutcome(tx, row, recipient, { type: 'failed', reason: error.message }, metrics);
          if (!everHandedOff) await releaseEmailQuota(tx, row);
          row.lastError = error.message;
          row.status = everHandedOff ? 'sent' : 'failed';
          row.settledAt = now;
          await tx.flush();
          await recordEmailEvents(tx, metrics);
        });
        await afterSettled(input.orgId, email);
        return { status: everHandedOff ? 'sent' : 'failed', handoff: { outcome: 'rejected', response: error.message } };
      }

      const beat = deps.heartbeat ? setInterval(deps.heartbeat, 2_000) : null;
      let result: RelayResult;
      try {
        result = await deps.relay.send(message, { from: verpAddress(email.id, config.bounceDomain), to: pending.map((r) => r.email) });
      } finally {
        if (beat) clearInterval(beat);
      }
      const nextAttemptAt = input.nextDelayMs === null ? null : new Date(Date.now() + input.nextDelayMs);
      const outcomes = outcomesOf(result, pending, nextAttemptAt);
      const firstAttempt = !recipients.some((r) => HANDED_OFF.has(r.status));
      const rejectedOutright = result.kind === 'message_refused' && result.permanent && firstAttempt;

      const status = await em.transactional(async (tx) => {
        const row = await tx.findOneOrFail(TransactionalEmail, { id: email.id });
        const rows = await tx.find(EmailRecipient, { emailId: email.id }, { orderBy: { id: 'asc' } });
        const metrics: EmailEventInput[] = [];
        for (const recipient of rows) {
          const outcome = outcomes.get(recipient.email);
          if (!outcome || !(PENDING as readonly string[]).includes(recipient.status)) continue;
          recipient.attempts += 1;
          await applyRecipientOutcome(tx, row, recipient, outcome, metrics);
        }
        if (rejectedOutright) await releaseEmailQuota(tx, row);
        if (result.kind !== 'recipients') row.lastError = result.response.slice(0, 1024);
        if (rows.some((r) => r.status === 'sent' || r.status === 'delivered')) row.sentAt ??= now;
        const settled = settle(row, rows, now);
        await tx.flush();
        await recordEmailEvents(tx, metrics);
        return settled;
      });
      if (status !== 'sending') await afterSettled(input.orgId, email);
      const anyAccepted = result.kind === 'recipients' && result.recipients.some((r) => r.accepted || (r.code ?? 0) >= 500);
      const handoff: HandoffResult = rejectedOutright
        ? { outcome: 'rejected', response: result.response }
        : anyAccepted || status !== 'sending'
          ? { outcome: 'accepted', response: result.response }
          : { outcome: 'deferred', response: result.response };
      return { status, handoff };
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
      await afterSettled(input.orgId, email);
      return { status: email.status };
    },
  };
}

export type EmailDelivery = ReturnType<typeof createEmailDelivery>;
