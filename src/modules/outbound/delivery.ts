import type { MikroORM } from '@mikro-orm/postgresql';
import { EmailRecipient, TransactionalEmail } from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { BlobStore } from '../../blob/blob-store.ts';
import type { Config } from '../../config.ts';
import type { Egress } from '../egress/egress.ts';
import { bounceHostOf } from '../sends/sends.fns.ts';
import { attemptDelivery, type AttemptContext } from './delivery-attempt.ts';
import { isPending, settle } from './delivery.fns.ts';
import { afterSettled, expireEmail, skipEmail } from './delivery-records.ts';
import type { ClaimedSend, DeliverInput, DeliverResult } from './delivery.types.ts';
import { BuildFailure, createMessageBuilder } from './message-builder.ts';
import type { Relay } from './relay.ts';
import type { SentRecorder } from './sent-recorder.ts';
import { createVerpSigner } from './verp.ts';

export type { AttemptedEmail, ClaimedSend, DeliverInput, DeliverResult, SendRecipient } from './delivery.types.ts';

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

/** The context of every attempt: the message builder and the VERP return path on top of the deps. */
function attemptContext(deps: EmailDeliveryDeps): AttemptContext {
  const { orm, config } = deps;
  // Without HERALD_ENCRYPTION_KEY nothing is built (no DKIM key), so no return path is needed.
  const verp = config.encryptionKey ? createVerpSigner(config.encryptionKey) : null;
  const returnPath = (emailId: string, domain: string): string => {
    if (!verp) throw new BuildFailure('HERALD_ENCRYPTION_KEY is not set: the return path cannot be signed');
    return verp.address(emailId, bounceHostOf(domain));
  };
  return { ...deps, builder: createMessageBuilder({ orm, blobs: deps.blobs, config }), returnPath };
}

/**
 * Delivery attempts of transactional emails, made by the domain drain (domain-drain.ts). An
 * attempt sends one SMTP transaction to the relay for the recipients not yet settled and
 * records each answer before returning, so a retry after a crash never sends to a recorded
 * recipient again (delivery-attempt.ts). The only window for a duplicate is a crash between
 * the relay's 250 and the commit of its record; the Message-ID stays the same, so receivers
 * can deduplicate. An attempt the relay accepts whole (the common case) is recorded by the
 * group-commit recorder when one is given; anything else (a refusal, a deferral, a bounce, a
 * message that cannot be built) through applyRecipientOutcome, one transaction (delivery-records.ts).
 */
export function createEmailDelivery(deps: EmailDeliveryDeps) {
  const ctx = attemptContext(deps);

  const delivery = {
    /** One delivery attempt of an email by id: claims it (a cancelled or settled email is left alone), then attempts it. */
    async deliver(input: DeliverInput): Promise<DeliverResult> {
      const em = scopeToOrg(deps.orm.em, input.orgId);
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
        if (status !== 'sending') await afterSettled(ctx, input.orgId, email.attachments);
        return { status, handoff: { outcome: 'accepted', response: null } };
      }
      return attemptDelivery(ctx, input.orgId, email, recipients, input.nextDelayMs);
    },

    /** One attempt of an email a drain claimed with its rows (no reload). */
    async deliverClaimed(email: ClaimedSend, nextDelayMs: number | null): Promise<DeliverResult> {
      if (!email.recipients.some((r) => isPending(r.status))) {
        return delivery.deliver({ orgId: email.orgId, emailId: email.id, attempt: email.handoffAttempts, nextDelayMs });
      }
      return attemptDelivery(ctx, email.orgId, email, email.recipients, nextDelayMs);
    },

    /** A broadcast message not sent at its turn: cancelled with the reason, what it took given back (skipEmail). */
    skip: (input: { orgId: string; emailId: string }, reason: string): Promise<void> => skipEmail(ctx, input, reason),

    /** The retry window closed: every recipient still deferred fails (email.failed); the email settles. */
    expire: (input: { orgId: string; emailId: string }) => expireEmail(ctx, input),
  };
  return delivery;
}

export type EmailDelivery = ReturnType<typeof createEmailDelivery>;
