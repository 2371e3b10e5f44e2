import type { EntityManager } from '@mikro-orm/postgresql';
import { AttachmentUpload, BUILT_IN_STREAMS } from '../../../db/entities/index.ts';
import type { BlobStore } from '../../blob/blob-store.ts';
import type { Config } from '../../config.ts';
import { AppError } from '../../errors.ts';
import { threadLockKey } from '../inbox/threading.ts';
import { ensureCreditShards } from '../orgs/credits.repo.ts';
import { isSandboxCaller, type SendCaller } from '../sandbox/sandbox.fns.ts';
import { reserveStreamBudget } from '../streams/streams.repo.ts';
import { SEND_WAKE_CHANNEL } from '../../queue/wakes.ts';
import { writeAcceptance } from './acceptance.repo.ts';
import { acceptedAnswer, composeEmailRow, composeInboxMessage, composeRecipientRows, type SendParts } from './compose-send.ts';
import { quotaShardFor, ShardShort, type CreditCharge, type CreditMode } from './quota.repo.ts';
import { checkSendingDomain } from './send-checks.ts';
import { utcDay } from './sends.fns.ts';
import type { SendEmailInput } from './sends.schemas.ts';
import type { AcceptanceAnswer, AcceptedEmail } from './sends.types.ts';

/** A committed acceptance: the answer, what it charged, and the domain whose queue holds it. */
export type CommittedEmail = AcceptedEmail & { charge: CreditCharge; domainId: string };

export interface AcceptEmailOptions {
  /** The workspace's entity manager (scopeToOrg), the one the send's checks read through. */
  em: EntityManager;
  blobs: BlobStore | null;
  config: Pick<Config, 'sends'>;
  caller: SendCaller;
  input: SendEmailInput;
  parts: SendParts;
  sizeBytes: number;
  answer: AcceptanceAnswer | undefined;
}

/** Stores the inline attachments' bytes under the email's keys; answers the keys written. */
async function writeInlineBlobs(blobs: BlobStore | null, parts: SendParts): Promise<string[]> {
  const written: string[] = [];
  for (const [index, attachment] of parts.prepared.entries()) {
    if (attachment.bytes === null) continue;
    if (!blobs) {
      throw new AppError(
        'service_unavailable',
        'Attachment storage is not configured on this server (BLOB_DIR), so attachments cannot be sent.',
      );
    }
    const key = `sends/${parts.orgId}/${parts.emailId}/${index}`;
    await blobs.put(key, attachment.bytes);
    attachment.record.blob_key = key;
    written.push(key);
  }
  return written;
}

/**
 * The acceptance transaction, charging credits in `creditMode` (QuotaRequest): checks the
 * sending domain and suppressions, reserves the stream's daily budget, stores inline bytes
 * (their keys pushed to `blobKeys` for the caller to clean up), then writes the email, its
 * recipients, its inbox message, the quota charge and the idempotent answer in one statement.
 */
function acceptInTransaction(
  options: AcceptEmailOptions,
  message: ReturnType<typeof composeInboxMessage>,
  creditMode: CreditMode,
  blobKeys: string[],
): Promise<CommittedEmail> {
  const { parts, input, answer: given } = options;
  const { orgId, at, recipients, scheduledAt } = parts;
  return options.em.transactional(async (tx) => {
    // Three round trips: this read (which takes the thread lock), the acceptance statement, the commit.
    const stream = input.stream ?? BUILT_IN_STREAMS.transactional;
    const lock = threadLockKey(orgId, message.thread);
    const checked = await checkSendingDomain(tx, orgId, parts.from.domain, recipients, stream, lock, given?.claim);
    const { domain } = checked;
    if (checked.stream.dailyCap !== null) {
      const budget = { orgId, stream: checked.stream.name, day: utcDay(scheduledAt ?? at), count: recipients.length };
      await reserveStreamBudget(tx, { ...budget, cap: checked.stream.dailyCap, now: at });
    }
    blobKeys.push(...(await writeInlineBlobs(options.blobs, parts)));
    const uploadIds = parts.prepared.flatMap((a) => (a.record.attachment_id ? [a.record.attachment_id] : []));
    if (uploadIds.length > 0) await tx.nativeUpdate(AttachmentUpload, { id: { $in: uploadIds } }, { referencedAt: at });
    const sandbox = isSandboxCaller(options.caller);
    const sender = { apiKeyId: options.caller.keyId, sandbox, domain, stream: checked.stream, sizeBytes: options.sizeBytes };
    const email = composeEmailRow(parts, input, sender);
    const rows = composeRecipientRows(parts);
    const accepted = acceptedAnswer(email, rows, at);
    const answerIsFinal = Boolean(scheduledAt) || options.config.sends.handoffWaitMs <= 0;
    const answer = answerIsFinal ? given : undefined;
    if (creditMode === 'consolidate') await ensureCreditShards(tx, orgId);
    const charge = await writeAcceptance(tx, {
      email,
      recipients: rows,
      message,
      quota: {
        orgId,
        domainId: domain.id,
        domain: domain.domain,
        day: email.quotaDay,
        count: recipients.length,
        cap: domain.dailyCap ?? null,
        now: at,
        shard: quotaShardFor(domain.dailyCap ?? null),
        mode: creditMode,
        // A drain of the domain running in any worker sees an immediate email at commit.
        ...(scheduledAt ? {} : { notifyChannel: SEND_WAKE_CHANNEL }),
      },
      ...(answer ? { answer: answer.cte(accepted) } : {}),
    });
    answer?.stored();
    return { ...accepted, charge, domainId: domain.id };
  });
}

/**
 * Writes a checked send: a refusal or a crash leaves nothing behind (inline bytes already
 * stored are deleted again). One credit shard first; all of them (rolled back and redone)
 * when that one is short.
 */
export async function acceptEmail(options: AcceptEmailOptions): Promise<CommittedEmail> {
  const message = composeInboxMessage(options.parts);
  const blobKeys: string[] = [];
  try {
    const accepted = await acceptInTransaction(options, message, 'shard', blobKeys).catch((error: unknown) => {
      if (error instanceof ShardShort) return acceptInTransaction(options, message, 'consolidate', blobKeys);
      throw error;
    });
    options.answer?.claim?.committed();
    return accepted;
  } catch (error) {
    for (const key of blobKeys) await options.blobs?.delete(key);
    throw error;
  }
}
