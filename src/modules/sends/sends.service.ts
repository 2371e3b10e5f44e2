import type { Client } from '@temporalio/client';
import { LockMode } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { AttachmentUpload, EmailRecipient, TransactionalEmail } from '../../../db/entities/index.ts';
import { newId } from '../../../db/ids.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { BlobStore } from '../../blob/blob-store.ts';
import type { Config } from '../../config.ts';
import { AppError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import type { IdempotencyClaim } from '../idempotency/idempotency.types.ts';
import type { SqlFragment } from '../../../db/sql-fragment.ts';
import { outboundMessage } from '../inbox/outbound.ts';
import { threadLockKey } from '../inbox/threading.ts';
import { createTemplatesService, type TemplatesService } from '../templates/templates.service.ts';
import { writeAcceptance } from './acceptance.repo.ts';
import { BUILT_IN_STREAMS } from '../../../db/entities/index.ts';
import { reserveStreamBudget } from '../streams/streams.repo.ts';
import { resolveSendContent } from './send-content.ts';
import { findEmailEvents, findEmailPage, type EmailEventView } from './email-log.repo.ts';
import type { KeysetPosition } from '../../../db/keyset.ts';
import { quotaShardFor, releaseEmailQuota, ShardShort, type CreditCharge, type CreditMode } from './quota.repo.ts';
import { ensureCreditShards } from '../orgs/credits.repo.ts';
import type { EmailRecord, RecipientRecord } from './sends.serializer.ts';
import { checkSendingDomain } from './send-checks.ts';
import { resolveSchedule } from './schedule.fns.ts';
import { messageSize, messageTooLarge, prepareAttachments } from './send-attachments.ts';
import { sendDomainActorContract } from '../../../workflows/send-domain.ts';
import { createActorWaker } from '../../temporal/actor-wake.ts';

/** How long the API's wake-up of a domain's actor may wait for Temporal before the reconciler takes over. */
const DOMAIN_WAKE_DEADLINE_MS = 2_000;
import { readHandoff, type HandoffResult } from './handoff.repo.ts';
import { SEND_WAKE_CHANNEL } from '../../queue/wakes.ts';
import {
  decodeBase64,
  envelopeRecipients,
  listUnsubscribeProblems,
  messageIdFor,
  parseFromAddress,
  reservedHeaderNames,
  utcDay,
} from './sends.fns.ts';
import { SEND_LIMITS, type ListEmailsFilters, type SendEmailInput } from './sends.schemas.ts';
import type { OffloadPool } from '../../offload/offload-pool.ts';
import { isSandboxCaller, type SendCaller } from '../sandbox/sandbox.fns.ts';
import { decideTracking, TRANSACTIONAL_TRACKING, trackingColumns } from '../tracking/tracking.fns.ts';

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

export interface AcceptedEmail {
  email: EmailRecord;
  recipients: RecipientRecord[];
}

/** The idempotent answer of an acceptance, stored by the acceptance statement (see IdempotentAnswer in http/route.ts). */
export interface AcceptanceAnswer {
  cte(accepted: AcceptedEmail): SqlFragment;
  stored(): void;
  /** The Idempotency-Key claim, run by the transaction's first statement (claimInTransaction). */
  claim?: IdempotencyClaim;
}

function invalidField(path: string, type: string, message: string, reason?: string): AppError {
  return new AppError('invalid_request', `Invalid body.${path}: ${message}.`, {
    ...(reason ? { reason } : {}),
    fields: [{ path, location: 'body', type, message }],
  });
}

/** How often the opt-in hand-off wait looks at the email. */
const HANDOFF_POLL_MS = 20;

/**
 * Transactional sends: acceptance (POST /outbox/emails), reading and cancelling. Acceptance
 * checks everything it can before writing (shape, from, headers, schedule, attachments, size,
 * domain, suppression), then in one transaction reserves credits and the domain's warm-up
 * count and writes the email, its recipients and its outbound inbox message: a refusal or a
 * crash leaves nothing behind. Inline attachment bytes go to the blob store first (deleted
 * again if the transaction fails). The committed email is a row of its domain's queue: the
 * commit notifies a running drain of the domain, and a domain without one gets its actor
 * (`send-domain:<id>`) woken; nothing on the request path waits for Temporal or the relay
 * unless SEND_HANDOFF_WAIT_MS asks for it.
 */
export function createSendsService(deps: SendsServiceDeps) {
  const { orm, config, logger } = deps;
  const now = deps.now ?? (() => new Date());
  // A lost wake-up is the send reconciler's to repeat; the 202 never waits for Temporal.
  const wakeDomain = createActorWaker({
    client: deps.temporal,
    config,
    logger,
    actor: sendDomainActorContract,
    deadlineMs: DOMAIN_WAKE_DEADLINE_MS,
  });
  const templates = deps.templates ?? createTemplatesService({ orm });

  /**
   * SEND_HANDOFF_WAIT_MS > 0 (off by default): waits up to `waitMs` for the first attempt's
   * answer, so an outright rejection by the provider can be answered 502; null when it takes
   * longer (the email stays accepted and on its way).
   */
  async function waitForHandoff(orgId: string, emailId: string, waitMs: number): Promise<HandoffResult | null> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const handoff = await readHandoff(orm.em, orgId, emailId);
      if (handoff || Date.now() >= deadline) return handoff;
      await new Promise((resolve) => setTimeout(resolve, Math.min(HANDOFF_POLL_MS, deadline - Date.now())));
    }
  }

  async function writeInlineBlobs(
    orgId: string,
    emailId: string,
    prepared: Awaited<ReturnType<typeof prepareAttachments>>,
  ): Promise<string[]> {
    const written: string[] = [];
    for (const [index, attachment] of prepared.entries()) {
      if (attachment.bytes === null) continue;
      if (!deps.blobs) {
        throw new AppError(
          'service_unavailable',
          'Attachment storage is not configured on this server (BLOB_DIR), so attachments cannot be sent.',
        );
      }
      const key = `sends/${orgId}/${emailId}/${index}`;
      await deps.blobs.put(key, attachment.bytes);
      attachment.record.blob_key = key;
      written.push(key);
    }
    return written;
  }

  /**
   * After the commit the email is durable and nothing may fail the request, except the opt-in
   * hand-off wait's 502. A lost wake-up is the send reconciler's to repeat; a domain whose
   * drain is running needs none.
   */
  async function afterCommit(orgId: string, accepted: AcceptedEmail & { charge: CreditCharge; domainId: string }) {
    const { email, recipients, charge } = accepted;
    if (!email.scheduledAt && !charge.domainDraining) void wakeDomain({ orgId, domainId: accepted.domainId }, { emailId: email.id });
    const handoff =
      email.scheduledAt || config.sends.handoffWaitMs <= 0 ? null : await waitForHandoff(orgId, email.id, config.sends.handoffWaitMs);
    if (handoff?.outcome === 'rejected') {
      throw new AppError(
        'bad_gateway',
        `The delivery provider rejected the message: ${handoff.response ?? 'no reason given'}. Credits and quota were released; it is safe to retry.`,
        {
          reason: 'PROVIDER_REJECTED',
          email_id: email.id,
          smtp_response: handoff.response,
        },
      );
    }
    return { email, recipients, handoff };
  }

  return {
    /**
     * Accepts one transactional email; answers the hand-off when it comes within the wait. A
     * test key's email is a sandbox email: the whole pipeline runs, but it is delivered to the
     * sandbox relay, never to a real one (src/modules/sandbox/).
     */
    async sendEmail(
      orgId: string,
      caller: SendCaller,
      input: SendEmailInput,
      options: {
        /**
         * The caller's idempotent answer for the accepted email, written by the acceptance
         * statement so it commits with the email. Not used when an opt-in hand-off wait could
         * still turn the answer into a 502.
         */
        answer?: AcceptanceAnswer;
      } = {},
    ): Promise<AcceptedEmail & { handoff: HandoffResult | null }> {
      const at = now();
      const from = parseFromAddress(input.from);
      if (!from) throw invalidField('from', 'from_address', 'must be addr@host or "Display Name <addr@host>"', 'INVALID_FROM');
      const headers = input.headers ?? {};
      const reserved = reservedHeaderNames(headers);
      if (reserved.length > 0) {
        throw new AppError('invalid_request', `Header ${reserved[0]} is set by Herald and cannot be overridden.`, {
          fields: reserved.map((name) => ({
            path: `headers.${name}`,
            location: 'body',
            type: 'reserved_header',
            message: 'is set by Herald',
          })),
        });
      }
      const unsubscribe = listUnsubscribeProblems(headers);
      if (unsubscribe.length > 0) {
        throw new AppError('invalid_request', `Invalid body.headers.${unsubscribe[0]!.name}: ${unsubscribe[0]!.message}.`, {
          fields: unsubscribe.map((p) => ({ path: `headers.${p.name}`, location: 'body', type: 'list_unsubscribe', message: p.message })),
        });
      }
      const schedule = resolveSchedule(input.scheduled_at, at);
      if (!schedule.ok) throw invalidField('scheduled_at', schedule.problem, schedule.message);
      const recipients = envelopeRecipients(input.to, input.cc, input.bcc);
      const content = await resolveSendContent(templates, orgId, input);

      const em = scopeToOrg(orm.em, orgId);
      const prepared = await prepareAttachments(em, input.attachments ?? [], deps.offload?.decodeBase64 ?? decodeInline);
      const size = messageSize(content.html ?? undefined, content.text ?? undefined, prepared);
      if (size > SEND_LIMITS.messageBytesMax) throw messageTooLarge(size);

      const emailId = newId(at);
      const headerValue = (name: string) => Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1] ?? null;
      const message = outboundMessage({
        rfcMessageId: messageIdFor(emailId, from.domain),
        subject: content.subject,
        text: content.text ?? '',
        html: content.html,
        from: { email: from.email, name: from.name ?? '' },
        to: recipients.filter((r) => r.kind === 'to').map((r) => ({ email: r.email, name: '' })),
        cc: recipients.filter((r) => r.kind === 'cc').map((r) => ({ email: r.email, name: '' })),
        inReplyTo: headerValue('in-reply-to'),
        references: (headerValue('references') ?? '').split(/\s+/).filter(Boolean),
        attachmentCount: prepared.length,
        createdAt: at,
      });
      const blobKeys: string[] = [];
      /** The acceptance transaction, charging credits in `creditMode` (QuotaRequest). */
      const accept = (creditMode: CreditMode) =>
        em.transactional(async (tx) => {
          // Three round trips: this read (which takes the thread lock), the acceptance statement, the commit.
          const { domain, stream } = await checkSendingDomain(
            tx,
            orgId,
            from.domain,
            recipients,
            input.stream ?? BUILT_IN_STREAMS.transactional,
            threadLockKey(orgId, message.thread),
            options.answer?.claim,
          );
          if (stream.dailyCap !== null) {
            const day = utcDay(schedule.at ?? at);
            await reserveStreamBudget(tx, { orgId, stream: stream.name, day, count: recipients.length, cap: stream.dailyCap, now: at });
          }
          blobKeys.push(...(await writeInlineBlobs(orgId, emailId, prepared)));
          const uploadIds = prepared.flatMap((a) => (a.record.attachment_id ? [a.record.attachment_id] : []));
          if (uploadIds.length > 0) await tx.nativeUpdate(AttachmentUpload, { id: { $in: uploadIds } }, { referencedAt: at });
          const email = {
            id: emailId,
            orgId,
            apiKeyId: caller.keyId,
            sandbox: isSandboxCaller(caller),
            domainId: domain.id,
            domain: domain.domain,
            fromEmail: from.email,
            fromName: from.name,
            replyTo: input.reply_to ?? null,
            subject: content.subject,
            html: content.html,
            text: content.text,
            templateId: content.template?.id ?? null,
            templateVersion: content.template?.version ?? null,
            tags: [...new Set(input.tags ?? [])],
            stream: stream.name,
            streamKind: stream.kind,
            tracking: decideTracking(input.tracking, TRANSACTIONAL_TRACKING),
            headers,
            attachments: prepared.map((a) => a.record),
            messageId: messageIdFor(emailId, domain.domain),
            status: schedule.at ? ('scheduled' as const) : ('queued' as const),
            scheduledAt: schedule.at,
            nextAttemptAt: schedule.at ?? at,
            sizeBytes: size,
            quotaDay: utcDay(schedule.at ?? at),
            createdAt: at,
          };
          const rows = recipients.map((r) => ({ id: newId(at), kind: r.kind, email: r.email }));
          // The answer a client sees: a successful reservation always charges one credit per recipient.
          const accepted: AcceptedEmail = {
            email: {
              ...email,
              ...trackingColumns(email.tracking),
              creditsCharged: recipients.length,
              overageCharged: 0,
              lastError: null,
              updatedAt: at,
              sentAt: null,
              cancelledAt: null,
            },
            recipients: rows.map((r) => ({
              ...r,
              status: 'queued' as const,
              attempts: 0,
              lastResponse: null,
              bounceType: null,
              nextAttemptAt: null,
              updatedAt: at,
            })),
          };
          const answerIsFinal = Boolean(schedule.at) || config.sends.handoffWaitMs <= 0;
          const answer = answerIsFinal ? options.answer : undefined;
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
              ...(schedule.at ? {} : { notifyChannel: SEND_WAKE_CHANNEL }),
            },
            ...(answer ? { answer: answer.cte(accepted) } : {}),
          });
          answer?.stored();
          return { ...accepted, charge, domainId: domain.id };
        });
      let accepted: AcceptedEmail & { charge: CreditCharge; domainId: string };
      try {
        // One credit shard first; all of them (rolled back and redone) when that one is short.
        accepted = await accept('shard').catch((error: unknown) => {
          if (error instanceof ShardShort) return accept('consolidate');
          throw error;
        });
        options.answer?.claim?.committed();
      } catch (error) {
        for (const key of blobKeys) await deps.blobs?.delete(key);
        throw error;
      }
      return afterCommit(orgId, accepted);
    },

    /** One email with its recipients (the rows: the dashboard shows more of them than the API's record), or 404. */
    async getEmail(orgId: string, id: string): Promise<{ email: TransactionalEmail; recipients: EmailRecipient[] }> {
      const em = scopeToOrg(orm.em, orgId);
      const email = await em.findOne(TransactionalEmail, { id });
      if (!email) throw new AppError('not_found', `Email ${id} was not found.`);
      const recipients = await em.find(EmailRecipient, { emailId: id }, { orderBy: { id: 'asc' } });
      return { email, recipients };
    },

    /** One email with its recipients and their events (the email's timeline), or 404. */
    async getEmailWithEvents(
      orgId: string,
      id: string,
    ): Promise<{ email: TransactionalEmail; recipients: EmailRecipient[]; events: EmailEventView[] }> {
      const found = await this.getEmail(orgId, id);
      return { ...found, events: await findEmailEvents(scopeToOrg(orm.em, orgId), orgId, id) };
    },

    /** The email log: a keyset page of the workspace's emails, newest first, filtered. */
    async listEmails(
      orgId: string,
      page: { limit: number; after?: KeysetPosition | undefined },
      filters: Omit<ListEmailsFilters, 'limit' | 'cursor'>,
    ) {
      return findEmailPage(scopeToOrg(orm.em, orgId), page, filters);
    },

    /**
     * Cancels a scheduled (or not yet started) send: 409 once sending started or settled. The
     * row moves to cancelled (off its domain's queue) with its credits and warm-up count given
     * back, in one transaction; a drain that already claimed it finds it cancelled and sends nothing.
     */
    async cancelEmail(orgId: string, id: string): Promise<AcceptedEmail> {
      const em = scopeToOrg(orm.em, orgId);
      await em.transactional(async (tx) => {
        const email = await tx.findOne(TransactionalEmail, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        if (!email) throw new AppError('not_found', `Email ${id} was not found.`);
        if (email.status !== 'scheduled' && email.status !== 'queued') {
          throw new AppError('conflict', `Email ${id} is ${email.status}: only a send that has not started can be cancelled.`, {
            reason: 'EMAIL_NOT_CANCELLABLE',
            status: email.status,
          });
        }
        email.status = 'cancelled';
        email.nextAttemptAt = null;
        email.cancelledAt = new Date();
        email.settledAt = email.cancelledAt;
        await releaseEmailQuota(tx, email);
        await tx.nativeUpdate(EmailRecipient, { emailId: id }, { status: 'cancelled' });
      });
      const email = await this.getEmail(orgId, id);
      for (const record of email.email.attachments) {
        if (record.blob_key && !record.attachment_id) await deps.blobs?.delete(record.blob_key);
      }
      return email;
    },
  };
}

export type SendsService = ReturnType<typeof createSendsService>;
