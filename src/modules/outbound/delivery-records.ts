import type { MikroORM } from '@mikro-orm/postgresql';
import {
  AttachmentUpload,
  type EmailAttachmentRecord,
  EmailRecipient,
  type EmailStatus,
  TransactionalEmail,
} from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { BlobStore } from '../../blob/blob-store.ts';
import { recordEmailEvents, type EmailEventInput } from '../metrics/email-events.ts';
import { releaseEmailQuota } from '../sends/quota.repo.ts';
import { HANDED_OFF, isInline, isPending, PENDING, settle } from './delivery.fns.ts';
import type { DeliverResult, SendRecipient } from './delivery.types.ts';
import type { BuildFailure, MessageSource } from './message-builder.ts';
import { applyRecipientOutcome, type RecipientOutcome } from './outcomes.ts';
import type { RelayResult } from './relay.ts';

/** What the delivery's record keeping needs. */
export interface DeliveryStore {
  orm: MikroORM;
  blobs: BlobStore | null;
}

/** After the email settled: transient inline bytes go, stored uploads count as used now. */
export async function afterSettled(store: DeliveryStore, orgId: string, attachments: readonly EmailAttachmentRecord[]): Promise<void> {
  if (attachments.length === 0) return;
  const uploadIds = attachments.flatMap((a) => (a.attachment_id ? [a.attachment_id] : []));
  if (uploadIds.length > 0)
    await scopeToOrg(store.orm.em, orgId).nativeUpdate(AttachmentUpload, { id: { $in: uploadIds } }, { referencedAt: new Date() });
  if (!store.blobs) return;
  for (const record of attachments) {
    if (isInline(record.blob_key, record.attachment_id)) await store.blobs.delete(record.blob_key as string);
  }
}

/** The email cannot be built: its pending recipients fail (credits back when nothing was ever handed off). */
export async function failBuild(
  store: DeliveryStore,
  orgId: string,
  email: MessageSource,
  recipients: readonly SendRecipient[],
  error: BuildFailure,
): Promise<DeliverResult> {
  const everHandedOff = recipients.some((r) => HANDED_OFF.has(r.status));
  const now = new Date();
  await scopeToOrg(store.orm.em, orgId).transactional(async (tx) => {
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
  await afterSettled(store, orgId, email.attachments);
  return { status: everHandedOff ? 'sent' : 'failed', handoff: { outcome: 'rejected', response: error.message } };
}

/** Records what the relay answered, one transaction through applyRecipientOutcome; the email's status after it. */
export async function recordOutcomes(
  store: DeliveryStore,
  orgId: string,
  emailId: string,
  result: RelayResult,
  outcomes: Map<string, RecipientOutcome>,
  releaseQuota: boolean,
): Promise<EmailStatus> {
  const now = new Date();
  return scopeToOrg(store.orm.em, orgId).transactional(async (tx) => {
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

/**
 * A broadcast message not sent at its turn (its contact unsubscribed, bounced, complained,
 * was suppressed or deleted; the broadcast was cancelled): its pending recipient is
 * cancelled with the reason, the message leaves the queue, and what it took is given back.
 */
export async function skipEmail(store: DeliveryStore, input: { orgId: string; emailId: string }, reason: string): Promise<void> {
  const now = new Date();
  await scopeToOrg(store.orm.em, input.orgId).transactional(async (tx) => {
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
}

/** The retry window closed: every recipient still deferred fails (email.failed); the email settles. */
export async function expireEmail(store: DeliveryStore, input: { orgId: string; emailId: string }): Promise<{ status: EmailStatus }> {
  const em = scopeToOrg(store.orm.em, input.orgId);
  const now = new Date();
  const email = await em.transactional(async (tx) => {
    const row = await tx.findOneOrFail(TransactionalEmail, { id: input.emailId });
    const rows = await tx.find(EmailRecipient, { emailId: input.emailId }, { orderBy: { id: 'asc' } });
    const metrics: EmailEventInput[] = [];
    for (const recipient of rows) {
      if (!isPending(recipient.status)) continue;
      const reason = `retries_exhausted: ${recipient.lastResponse ?? 'temporary failures'}`;
      await applyRecipientOutcome(tx, row, recipient, { type: 'failed', reason }, metrics);
    }
    if (!rows.some((r) => HANDED_OFF.has(r.status))) await releaseEmailQuota(tx, row);
    if (row.status === 'sending' || row.status === 'queued' || row.status === 'scheduled') settle(row, rows, now);
    await tx.flush();
    await recordEmailEvents(tx, metrics);
    return row;
  });
  await afterSettled(store, input.orgId, email.attachments);
  return { status: email.status };
}
