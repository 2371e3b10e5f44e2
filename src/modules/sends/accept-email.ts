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
import { inShortTransaction } from '../../../db/short-transaction.ts';
import { acceptanceStatement, writeAcceptance, type Acceptance } from './acceptance.repo.ts';
import { acceptedAnswer, composeEmailRow, composeInboxMessage, composeRecipientRows, type SendParts } from './compose-send.ts';
import { chargeOf, quotaShardFor, refusalRow, ShardShort, type CreditCharge, type CreditMode, type ReservationRow } from './quota.repo.ts';
import { checkSendingDomain, judgeSendingDomain } from './send-checks.ts';
import { domainCheckOf, domainCheckStatement, type DomainCheckRow, type SendingDomain } from './suppression.repo.ts';
import type { ResolvedStream } from '../streams/streams.fns.ts';
import { utcDay } from './sends.fns.ts';
import type { SendEmailInput } from './sends.schemas.ts';
import type { AcceptanceAnswer, AcceptedEmail } from './sends.types.ts';
import type { StoredAnswer } from '../idempotency/idempotency.types.ts';

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

/** Whether the 202 is the send's final answer, stored with the acceptance (not with the opt-in hand-off wait, whose answer may turn into a 502). */
function answerIsFinal(options: AcceptEmailOptions): boolean {
  return Boolean(options.parts.scheduledAt) || options.config.sends.handoffWaitMs <= 0;
}

/** The email row of a send on `domain` and `stream`. */
function emailRowOf(options: AcceptEmailOptions, domain: SendingDomain, stream: ResolvedStream) {
  const sender = { apiKeyId: options.caller.keyId, sandbox: isSandboxCaller(options.caller), domain, stream, sizeBytes: options.sizeBytes };
  return composeEmailRow(options.parts, options.input, sender);
}

/**
 * The acceptance statement's input for a checked send, the answer it gives, and whether its
 * idempotent answer is written with it (not by the statement when `answerClaimed`: the claim
 * of the transaction's first statement wrote it, claimedAnswer).
 */
function composeAcceptance(
  options: AcceptEmailOptions,
  message: ReturnType<typeof composeInboxMessage>,
  checked: { domain: SendingDomain; stream: ResolvedStream },
  creditMode: CreditMode,
  answerClaimed = false,
): { acceptance: Acceptance; accepted: AcceptedEmail; answer: AcceptanceAnswer | undefined } {
  const { parts, answer: given } = options;
  const { orgId, at, recipients, scheduledAt } = parts;
  const { domain } = checked;
  const email = emailRowOf(options, domain, checked.stream);
  const rows = composeRecipientRows(parts);
  const accepted = acceptedAnswer(email, rows, at);
  const answer = answerIsFinal(options) ? given : undefined;
  const acceptance: Acceptance = {
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
    ...(answer && !answerClaimed ? { answer: answer.cte(accepted) } : {}),
  };
  return { acceptance, accepted, answer };
}

/**
 * The idempotent answer a short acceptance's claim writes (the record written once, completed,
 * instead of claimed by the first statement and updated by the second), or undefined (the
 * claim alone, the answer by the acceptance statement) when the answer is not final or the
 * route gives none. The answer is known before the first statement: it is the email as accepted
 * on the domain named by the From address (the domain's row is matched by that very name) and
 * the stream asked for; the domain's id and the stream's kind are not part of it. Uncommitted,
 * the record holds the key against a concurrent request exactly as a running claim does, and a
 * refused or failed acceptance rolls it back with everything else.
 */
function claimedAnswer(options: AcceptEmailOptions, stream: string): StoredAnswer | undefined {
  const given = options.answer;
  if (!given?.claim || !given.answer || !answerIsFinal(options)) return undefined;
  const { parts } = options;
  const domain: SendingDomain = { id: '', domain: parts.from.domain, status: 'verified', reputationState: 'healthy', dailyCap: null };
  const email = emailRowOf(options, domain, { name: stream, kind: 'transactional', dailyCap: null });
  return given.answer(acceptedAnswer(email, composeRecipientRows(parts), parts.at));
}

/** The thread lock of the send's transaction and the stream it is sent on. */
function lockAndStream(options: AcceptEmailOptions, message: ReturnType<typeof composeInboxMessage>) {
  return { stream: options.input.stream ?? BUILT_IN_STREAMS.transactional, lock: threadLockKey(options.parts.orgId, message.thread) };
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
  const { parts, answer: given } = options;
  const { orgId, at, recipients, scheduledAt } = parts;
  return options.em.transactional(async (tx) => {
    // Four round trips: BEGIN, this read (which takes the thread lock), the acceptance statement, the commit.
    const { stream, lock } = lockAndStream(options, message);
    const checked = await checkSendingDomain(tx, orgId, parts.from.domain, recipients, stream, lock, given?.claim);
    if (checked.stream.dailyCap !== null) {
      const budget = { orgId, stream: checked.stream.name, day: utcDay(scheduledAt ?? at), count: recipients.length };
      await reserveStreamBudget(tx, { ...budget, cap: checked.stream.dailyCap, now: at });
    }
    blobKeys.push(...(await writeInlineBlobs(options.blobs, parts)));
    const uploadIds = parts.prepared.flatMap((a) => (a.record.attachment_id ? [a.record.attachment_id] : []));
    if (uploadIds.length > 0) await tx.nativeUpdate(AttachmentUpload, { id: { $in: uploadIds } }, { referencedAt: at });
    const { acceptance, accepted, answer } = composeAcceptance(options, message, checked, creditMode);
    if (creditMode === 'consolidate') await ensureCreditShards(tx, orgId);
    const charge = await writeAcceptance(tx, acceptance);
    answer?.stored();
    return { ...accepted, charge, domainId: checked.domain.id };
  });
}

/**
 * The common acceptance (no attachments, a stream without a daily budget, credits from one
 * shard) in a short transaction (db/short-transaction.ts): BEGIN with the read, the acceptance
 * statement with COMMIT, two round trips instead of four; the statements are those of
 * acceptInTransaction. A refused reservation fails the acceptance statement, so nothing
 * commits. Answers null, with nothing written, for a send whose stream turns out to have a
 * daily budget: acceptInTransaction reserves it.
 */
async function acceptShort(options: AcceptEmailOptions, message: ReturnType<typeof composeInboxMessage>): Promise<CommittedEmail | null> {
  const { parts, answer: given } = options;
  const { stream, lock } = lockAndStream(options, message);
  const addresses = parts.recipients.map((r) => r.email);
  const claimed = claimedAnswer(options, stream);
  const claim = given?.claim ? { claim: given.claim.cte(claimed) } : {};
  return inShortTransaction(options.em, async (tx) => {
    const [row] = await tx.begin<DomainCheckRow>(
      domainCheckStatement(parts.orgId, parts.from.domain, addresses, stream, { threadLock: lock, ...claim }),
    );
    const checked = judgeSendingDomain(domainCheckOf(row), parts.from.domain, parts.recipients, stream, given?.claim);
    if (checked.stream.dailyCap !== null) throw NEEDS_GENERAL_PATH;
    // The claimed answer named the domain as the From address does: the row found must say the same.
    if (claimed && checked.domain.domain !== parts.from.domain) throw NEEDS_GENERAL_PATH;
    const { acceptance, accepted, answer } = composeAcceptance(options, message, checked, 'shard', claimed !== undefined);
    const rows = await tx
      .commitWith<ReservationRow>(acceptanceStatement(acceptance, { refuseInStatement: true }))
      .catch((error: unknown) => {
        const refused = refusalRow(error);
        if (refused) chargeOf(refused, acceptance.quota);
        throw error;
      });
    answer?.stored();
    return { ...accepted, charge: chargeOf(rows[0], acceptance.quota), domainId: checked.domain.id };
  }).catch((error: unknown) => {
    if (error === NEEDS_GENERAL_PATH) return null;
    throw error;
  });
}

/** acceptShort's signal that the send takes acceptInTransaction (rolled back, nothing written). */
const NEEDS_GENERAL_PATH = new Error('this send needs the general acceptance transaction');

/**
 * Writes a checked send: a refusal or a crash leaves nothing behind (inline bytes already
 * stored are deleted again). One credit shard first; all of them (rolled back and redone)
 * when that one is short. A send without attachments goes through acceptShort first.
 */
export async function acceptEmail(options: AcceptEmailOptions): Promise<CommittedEmail> {
  const message = composeInboxMessage(options.parts);
  const blobKeys: string[] = [];
  const general = (mode: CreditMode) => acceptInTransaction(options, message, mode, blobKeys);
  try {
    const first =
      options.parts.prepared.length === 0
        ? () => acceptShort(options, message).then((short) => short ?? general('shard'))
        : () => general('shard');
    const accepted = await first().catch((error: unknown) => {
      if (error instanceof ShardShort) return general('consolidate');
      throw error;
    });
    options.answer?.claim?.committed();
    return accepted;
  } catch (error) {
    for (const key of blobKeys) await options.blobs?.delete(key);
    throw error;
  }
}
