import type { Client } from '@temporalio/client';
import type { MikroORM } from '@mikro-orm/postgresql';
import { newId } from '../../../db/ids.ts';
import type { KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { BlobStore } from '../../blob/blob-store.ts';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import type { OffloadPool } from '../../offload/offload-pool.ts';
import { createActorWaker } from '../../temporal/actor-wake.ts';
import { sendDomainActorContract } from '../../../workflows/send-domain.ts';
import type { SendCaller } from '../sandbox/sandbox.fns.ts';
import { createTemplatesService, type TemplatesService } from '../templates/templates.service.ts';
import { acceptEmail } from './accept-email.ts';
import { awaitHandoff } from './await-handoff.ts';
import { cancelEmail } from './cancel-email.ts';
import { checkSendRequest } from './check-send-request.ts';
import type { HandoffResult } from './handoff.repo.ts';
import { getEmail, getEmailWithEvents, listEmails } from './read-emails.ts';
import { messageSize, messageTooLarge, prepareAttachments } from './send-attachments.ts';
import { resolveSendContent } from './send-content.ts';
import { decodeBase64, envelopeRecipients } from './sends.fns.ts';
import { SEND_LIMITS, type ListEmailsFilters, type SendEmailInput } from './sends.schemas.ts';
import type { AcceptanceAnswer, AcceptedEmail } from './sends.types.ts';

export type { AcceptanceAnswer, AcceptedEmail } from './sends.types.ts';

/** How long the API's wake-up of a domain's actor may wait for Temporal before the reconciler takes over. */
const DOMAIN_WAKE_DEADLINE_MS = 2_000;

type EmailPage = { limit: number; after?: KeysetPosition | undefined };

const decodeInline = (text: string) => Promise.resolve(decodeBase64(text));

export interface SendsServiceDeps {
  orm: MikroORM;
  blobs: BlobStore | null;
  temporal: Client;
  config: Pick<Config, 'temporal' | 'sends' | 'queues'>;
  logger: Logger;
  /** Decodes inline attachments on another thread (the api's offload pool); else inline. */
  offload?: Pick<OffloadPool, 'decodeBase64'>;
  /** Where template sends find their template (default: the workspace's templates through `orm`). */
  templates?: Pick<TemplatesService, 'getTemplate'>;
  now?: () => Date;
}

/**
 * Transactional sends: acceptance (POST /outbox/emails), reading and cancelling. Acceptance
 * checks everything it can before writing (shape, from, headers, schedule, attachments, size,
 * domain, suppression), then in one transaction reserves credits and the domain's warm-up
 * count and writes the email, its recipients and its outbound inbox message (accept-email.ts).
 * The committed email is a row of its domain's queue: the commit notifies a running drain of
 * the domain, and a domain without one gets its actor (`send-domain:<id>`) woken; nothing on
 * the request path waits for Temporal or the relay unless SEND_HANDOFF_WAIT_MS asks for it.
 */
export function createSendsService(deps: SendsServiceDeps) {
  const { orm, config } = deps;
  const now = deps.now ?? (() => new Date());
  // A lost wake-up is the send reconciler's to repeat; the 202 never waits for Temporal.
  const wakeDomain = createActorWaker({
    client: deps.temporal,
    config,
    logger: deps.logger,
    actor: sendDomainActorContract,
    deadlineMs: DOMAIN_WAKE_DEADLINE_MS,
  });
  const templates = deps.templates ?? createTemplatesService({ orm });

  return {
    /**
     * Accepts one transactional email; answers the hand-off when it comes within the wait. A
     * test key's email is a sandbox email: the whole pipeline runs, but it is delivered to the
     * sandbox relay, never to a real one (src/modules/sandbox/). `options.answer`: the caller's
     * idempotent answer, written by the acceptance statement so it commits with the email (not
     * used when an opt-in hand-off wait could still turn the answer into a 502).
     */
    async sendEmail(
      orgId: string,
      caller: SendCaller,
      input: SendEmailInput,
      options: { answer?: AcceptanceAnswer } = {},
    ): Promise<AcceptedEmail & { handoff: HandoffResult | null }> {
      const at = now();
      const { from, headers, schedule } = checkSendRequest(input, at);
      const recipients = envelopeRecipients(input.to, input.cc, input.bcc);
      const content = await resolveSendContent(templates, orgId, input);
      const em = scopeToOrg(orm.em, orgId);
      const prepared = await prepareAttachments(em, input.attachments ?? [], deps.offload?.decodeBase64 ?? decodeInline);
      const sizeBytes = messageSize(content.html ?? undefined, content.text ?? undefined, prepared);
      if (sizeBytes > SEND_LIMITS.messageBytesMax) throw messageTooLarge(sizeBytes);
      const parts = { orgId, emailId: newId(at), at, from, headers, recipients, content, prepared, scheduledAt: schedule.at };
      const accepted = await acceptEmail({ em, blobs: deps.blobs, config, caller, input, parts, sizeBytes, answer: options.answer });
      // After the commit the email is durable: nothing may fail the request but the opt-in wait's 502.
      if (!accepted.email.scheduledAt && !accepted.charge.domainDraining) {
        void wakeDomain({ orgId, domainId: accepted.domainId }, { emailId: accepted.email.id });
      }
      return awaitHandoff({ em: orm.em, orgId, waitMs: config.sends.handoffWaitMs }, accepted);
    },

    getEmail: (orgId: string, id: string) => getEmail(orm.em, orgId, id),
    getEmailWithEvents: (orgId: string, id: string) => getEmailWithEvents(orm.em, orgId, id),
    listEmails: (orgId: string, page: EmailPage, filters: Omit<ListEmailsFilters, 'limit' | 'cursor'>) =>
      listEmails(orm.em, orgId, page, filters),
    cancelEmail: (orgId: string, id: string): Promise<AcceptedEmail> => cancelEmail({ em: orm.em, blobs: deps.blobs, orgId, id }),
  };
}

export type SendsService = ReturnType<typeof createSendsService>;
