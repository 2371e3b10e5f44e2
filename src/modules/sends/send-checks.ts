import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../errors.ts';
import type { IdempotencyClaim } from '../idempotency/idempotency.types.ts';
import type { EnvelopeRecipient } from './sends.fns.ts';
import { streamKindOf, type ResolvedStream } from '../streams/streams.fns.ts';
import { unknownStream } from '../streams/streams.repo.ts';
import { findDomainAndSuppressed, type DomainCheck, type SendingDomain } from './suppression.repo.ts';

/** The reserved mailbox-simulator domain of the dev mail sink: suppressed@ behaves as listed. */
export const SIMULATOR_SUPPRESSED = 'suppressed@simulator.herald.test';

/** Why a domain may not send now (not verified, DNS attention, reputation recovery, the workspace's reputation pause of everything), or null. */
export function domainRefusal(domain: Pick<SendingDomain, 'status' | 'reputationState' | 'workspacePause'>, host: string): AppError | null {
  const refuse = (reason: string, message: string) => new AppError('forbidden', message, { reason, domain: host });
  if (domain.status === 'pending') return refuse('DOMAIN_NOT_READY', `${host} has not passed DNS verification yet.`);
  if (domain.status === 'attention')
    return refuse('DOMAIN_ATTENTION', `${host} lost a required DNS record; sending from it is paused until fixed.`);
  if (domain.reputationState === 'recovery') {
    return refuse('DOMAIN_REPUTATION_RECOVERY', `${host} is in reputation recovery; sending from it is paused.`);
  }
  if (domain.workspacePause === 'all') {
    return refuse(
      'WORKSPACE_REPUTATION_PAUSED',
      "This workspace's sending is paused by its reputation policy (bounce or complaint rate past its threshold) until an operator resumes it.",
    );
  }
  return null;
}

/**
 * The sending domain of an acceptance, checked (exists, verified, not paused), and its stream
 * (422 UNKNOWN_STREAM when the workspace has none by that name), with the recipients'
 * suppression for that stream, in the transaction's first statement, which also takes the
 * thread lock `threadLock` and, with `claim`, the request's Idempotency-Key (a key another
 * request holds throws `claim.taken()`).
 */
export async function checkSendingDomain(
  tx: EntityManager,
  orgId: string,
  host: string,
  recipients: readonly EnvelopeRecipient[],
  streamName: string,
  threadLock: string,
  claim?: IdempotencyClaim,
): Promise<{ domain: SendingDomain; stream: ResolvedStream }> {
  const addresses = recipients.map((r) => r.email);
  const found = await findDomainAndSuppressed(tx, orgId, host, addresses, streamName, {
    threadLock,
    ...(claim ? { claim: claim.cte() } : {}),
  });
  return judgeSendingDomain(found, host, recipients, streamName, claim);
}

/**
 * What acceptance's read found (DomainCheck), judged: throws `claim.taken()` when the key was
 * not claimed, 422 UNKNOWN_STREAM, 403 for a domain that is missing or may not send, 403
 * RECIPIENT_SUPPRESSED; answers the domain and the stream.
 */
export function judgeSendingDomain(
  found: DomainCheck,
  host: string,
  recipients: readonly EnvelopeRecipient[],
  streamName: string,
  claim?: IdempotencyClaim,
): { domain: SendingDomain; stream: ResolvedStream } {
  const { domain, suppressed: suppressedSet, stream: streamRow, claimed } = found;
  const addresses = recipients.map((r) => r.email);
  if (claim && !claimed) throw claim.taken();
  const kind = streamKindOf(streamName, streamRow.storedKind);
  if (!kind) {
    throw unknownStream(streamName, 'stream');
  }
  if (!domain)
    throw new AppError('forbidden', `${host} is not a sending domain of this workspace.`, { reason: 'DOMAIN_NOT_FOUND', domain: host });
  const refusal = domainRefusal(domain, host);
  if (refusal) throw refusal;
  if (addresses.includes(SIMULATOR_SUPPRESSED)) suppressedSet.add(SIMULATOR_SUPPRESSED);
  const suppressed = addresses.filter((a) => suppressedSet.has(a));
  if (suppressed.length > 0) {
    throw new AppError('forbidden', `Herald will not send to ${suppressed.join(', ')}: on this workspace's suppression list.`, {
      reason: 'RECIPIENT_SUPPRESSED',
      recipients: suppressed,
      stream: streamName,
    });
  }
  return { domain, stream: { name: streamName, kind, dailyCap: streamRow.dailyCap } };
}
