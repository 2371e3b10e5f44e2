import { hostname } from 'node:os';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { InboundMessage, InboxMessage, type InboxMessageKind } from '../../../db/entities/index.ts';
import { newId } from '../../../db/ids.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { readBlob, type BlobStore } from '../../blob/blob-store.ts';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import { recordEvent } from '../events/events.fns.ts';
import { participantsOf, replyCandidates } from '../inbox/threading.ts';
import { fireEmailReply } from '../automations/automation-triggers.ts';
import type { AutomationWaker } from '../automations/automation-wake.ts';
import { lockWorkspaceThreads, placeInThread } from '../inbox/thread-placement.repo.ts';
import { autoReplyReason } from './auto-reply.ts';
import { settleAttachments, storeAttachments, type StoreOutcome } from './attachments.ts';
import { checkAuthentication, createAuthResolver, type AuthResultsSummary } from './auth-results.ts';
import { countIngestAttempt } from './inbound-queue.repo.ts';
import { parseMessageStream, scanSubject, type ParsedMessage } from './mime.ts';
import { appliesReport, CLASSIFY_MAX_BYTES, type InboundReportHooks, type InboundReportLike } from './reports-hook.ts';
import { routeRecipients, type InboundRoute } from './routing.ts';
import { createVerpSigner } from '../outbound/verp.ts';
import { createDmarcIntake } from '../dmarc/dmarc-intake.ts';

export interface InboundIngestionDeps {
  orm: MikroORM;
  blobs: BlobStore | null;
  config: Pick<Config, 'bounceDomain' | 'dns' | 'smtp' | 'encryptionKeys'>;
  reports?: InboundReportHooks | undefined;
  logger?: Logger;
  /** Wakes automations a reply gave runs or events; without it the automation reconciler finds them. */
  wakeAutomations?: AutomationWaker | undefined;
}

export type RecordOutcome =
  | { status: 'recorded'; orgIds: string[]; messageIds: string[]; attachmentsPending: boolean }
  /** The raw message is already ingested or failed: nothing to do. */
  | { status: 'settled' }
  | { status: 'missing' }
  /** No workspace owns any recipient any more (a domain removed since RCPT, an unknown VERP id). */
  | { status: 'unroutable' };

/** Bytes of the raw message read for the fallback subject when the MIME parse fails early. */
const HEAD_BYTES = 64 * 1024;

async function readHead(blobs: BlobStore, key: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  const stream = await blobs.get(key);
  for await (const chunk of stream) {
    chunks.push(chunk as Buffer);
    length += (chunk as Buffer).length;
    if (length >= HEAD_BYTES) break;
  }
  stream.destroy();
  return Buffer.concat(chunks).subarray(0, HEAD_BYTES);
}

function emailReceivedData(message: InboxMessage) {
  return {
    message: {
      id: message.id,
      thread_id: message.threadId,
      direction: 'inbound' as const,
      subject: message.subject,
      from: { email: message.fromEmail, name: message.fromName },
      to: message.to,
      rfc_message_id: message.rfcMessageId,
      attachment_count: message.attachmentCount,
      created_at: message.createdAt.toISOString(),
    },
  };
}

/**
 * Ingestion of one raw inbound message: the steps the inbound actor's drain runs
 * (intake-drain.ts). Every step is idempotent: messages are unique per (raw message,
 * workspace) and attachments per (message, position), so a retry after a crash finishes the
 * work without duplicating it.
 */
export function createInboundIngestion(deps: InboundIngestionDeps) {
  const { orm, config, reports } = deps;
  const resolver = createAuthResolver(config);
  const verp = config.encryptionKeys.length > 0 ? createVerpSigner(config.encryptionKeys) : null;
  const dmarc = createDmarcIntake({ orm, logger: deps.logger });
  const mta = config.smtp.host === '0.0.0.0' || config.smtp.host === '' ? hostname() : config.smtp.host;
  const blobStore = (): BlobStore => {
    if (!deps.blobs) throw new Error('no blob store configured (BLOB_DIR is empty)');
    return deps.blobs;
  };

  async function parse(inbound: InboundMessage): Promise<ParsedMessage> {
    const blobs = blobStore();
    const parsed = await parseMessageStream(await blobs.get(inbound.blobKey));
    if (parsed.htmlTooLong) {
      // An html-only body too large to convert: keep the html (capped), without a text version.
      const again = await parseMessageStream(await blobs.get(inbound.blobKey), undefined, { htmlOnly: true });
      parsed.html = again.html;
      parsed.text = again.text;
    }
    if (parsed.textTruncated) deps.logger?.info('inbound: text body cut to the inbox limit', { inboundId: inbound.id });
    if (parsed.parseError) {
      deps.logger?.warn('inbound: MIME parse stopped early; keeping what was read', { inboundId: inbound.id, error: parsed.parseError });
      if (!parsed.subject) parsed.subject = scanSubject(await readHead(blobs, inbound.blobKey));
    }
    return parsed;
  }

  async function classify(inbound: InboundMessage): Promise<InboundReportLike | null> {
    if (!reports || inbound.sizeBytes > CLASSIFY_MAX_BYTES) return null;
    try {
      const raw = await readBlob(blobStore(), inbound.blobKey);
      return await reports.classify({ raw, mailFrom: inbound.mailFrom, rcptTo: inbound.rcptTo, bounceDomain: config.bounceDomain });
    } catch (error) {
      deps.logger?.warn('inbound: classification failed; recorded as a message', { inboundId: inbound.id, error });
      return null;
    }
  }

  /**
   * Applies a bounce/complaint report inside a savepoint of the message's transaction. A failure
   * fails the step (retried) until the final attempt; then the message is recorded without the
   * report's effects rather than lost.
   */
  async function applyReport(
    em: EntityManager,
    route: InboundRoute,
    report: InboundReportLike,
    messageId: string,
    final: boolean,
  ): Promise<void> {
    try {
      const applied = await em.transactional((savepoint) => reports!.apply!(savepoint, route, report, messageId));
      if (applied.unapplied)
        deps.logger?.info('inbound: a report changed nothing; kept in the inbox', {
          orgId: route.orgId,
          messageId,
          kind: report.kind,
          reason: applied.unapplied,
        });
    } catch (error) {
      if (!final) throw error;
      deps.logger?.error('inbound: applying the report failed; the message is recorded without it', {
        orgId: route.orgId,
        messageId,
        error,
      });
    }
  }

  /**
   * One inbox message in one workspace, with its thread, event and report, in one transaction;
   * a message (not a report, nor an automatic answer such as an out-of-office: auto-reply.ts)
   * that answers an email Herald sent fires its automation triggers there too
   * (automation-triggers.ts fireEmailReply), and the automations are woken after.
   */
  async function recordForWorkspace(
    inbound: InboundMessage,
    route: InboundRoute,
    parsed: ParsedMessage,
    auth: AuthResultsSummary,
    report: InboundReportLike | null,
    final: boolean,
  ): Promise<string> {
    const { id, touched } = await scopeToOrg(orm.em, route.orgId).transactional(async (em: EntityManager) => {
      const existing = await em.findOne(InboxMessage, { inboundId: inbound.id, orgId: route.orgId });
      if (existing) return { id: existing.id, touched: [] };
      const participants = participantsOf([parsed.from?.email, ...parsed.to.map((a) => a.email), ...parsed.cc.map((a) => a.email)]);
      await lockWorkspaceThreads(em, route.orgId, { subject: parsed.subject, participants });
      const at = inbound.createdAt;
      const { threadId, parentId } = await placeInThread(em, route.orgId, {
        subject: parsed.subject,
        inReplyTo: parsed.inReplyTo,
        references: parsed.references,
        participants,
        at,
      });
      const kind: InboxMessageKind = report?.kind ?? 'message';
      const attachmentCount = parsed.attachments.length;
      const message = em.create(InboxMessage, {
        id: newId(),
        orgId: route.orgId,
        threadId,
        direction: 'inbound',
        kind,
        inboundId: inbound.id,
        emailId: null,
        subject: parsed.subject,
        text: parsed.text,
        html: parsed.html,
        fromEmail: parsed.from?.email ?? '',
        fromName: parsed.from?.name ?? '',
        to: parsed.to,
        cc: parsed.cc,
        rfcMessageId: parsed.messageId,
        inReplyTo: parsed.inReplyTo,
        references: parsed.references,
        inReplyToId: parentId,
        attachmentIngestStatus: attachmentCount > 0 ? 'pending' : 'ready',
        failedAttachments: [],
        attachmentCount,
        attachmentsReady: attachmentCount === 0,
        authResults: auth,
        sentAt: parsed.date,
        createdAt: at,
        updatedAt: new Date(),
      });
      if (kind === 'message') recordEvent(em, route.orgId, 'email.received', emailReceivedData(message));
      await em.flush();
      if (report && reports?.apply && appliesReport(kind)) await applyReport(em, route, report, message.id, final);
      const touched =
        kind === 'message' && autoReplyReason(parsed) === null
          ? await fireEmailReply(em, route.orgId, {
              candidates: replyCandidates(parsed.inReplyTo, parsed.references),
              sender: message.fromEmail,
              inboxMessageId: message.id,
            })
          : [];
      return { id: message.id, touched };
    });
    deps.wakeAutomations?.(touched);
    return id;
  }

  return {
    /**
     * Parses the raw message (attachments only measured), checks its authentication, classifies
     * it, routes it and records one inbox message per workspace reached, each `pending` until
     * its attachments are stored (`ready` at once without attachments). `final`: the last
     * attempt, which records the message even if applying its report fails.
     */
    async recordMessages(inboundId: string, options: { final?: boolean } = {}): Promise<RecordOutcome> {
      const em = orm.em.fork();
      const inbound = await em.findOne(InboundMessage, { id: inboundId });
      if (!inbound) return { status: 'missing' };
      if (inbound.status !== 'received') return { status: 'settled' };
      await countIngestAttempt(em, inboundId);
      const report = await classify(inbound);
      const routed = await routeRecipients(em, inbound.rcptTo, config.bounceDomain, verp);
      if (routed.length === 0) return { status: 'unroutable' };
      // DMARC reports to a report address are stored as reports, not inbox messages.
      const reported = await dmarc.ingest({
        id: inbound.id,
        rcptTo: inbound.rcptTo,
        readRaw: () => readBlob(blobStore(), inbound.blobKey),
      });
      const routes = routed.filter((route) => route.emailId !== null || !reported.has(route.orgId));
      if (routes.length === 0) return { status: 'recorded', orgIds: [...reported], messageIds: [], attachmentsPending: false };
      const [parsed, auth] = await Promise.all([
        parse(inbound),
        blobStore()
          .get(inbound.blobKey)
          .then((raw) =>
            checkAuthentication({
              raw,
              mailFrom: inbound.mailFrom,
              remoteAddress: inbound.remoteAddress ?? null,
              heloName: inbound.heloName ?? null,
              mta,
              resolver,
            }),
          ),
      ]);
      const messageIds: string[] = [];
      for (const route of routes) messageIds.push(await recordForWorkspace(inbound, route, parsed, auth, report, options.final ?? false));
      return {
        status: 'recorded',
        orgIds: routes.map((route) => route.orgId),
        messageIds,
        attachmentsPending: parsed.attachments.length > 0,
      };
    },

    /** Stores the attachments of the raw message's pending inbox messages; see attachments.ts. */
    async storeAttachments(inboundId: string, options: { final: boolean }): Promise<StoreOutcome> {
      const inbound = await orm.em.fork().findOne(InboundMessage, { id: inboundId });
      if (!inbound) return { stored: 0, failed: 0, settled: 0 };
      return storeAttachments({ orm, blobs: blobStore(), inbound, final: options.final });
    },

    /** Ends ingestion successfully. */
    async markIngested(inboundId: string): Promise<void> {
      await orm.em
        .fork()
        .nativeUpdate(
          InboundMessage,
          { id: inboundId },
          { status: 'ingested', ingestedAt: new Date(), lastError: null, updatedAt: new Date() },
        );
    },

    /**
     * Ends ingestion as failed (retries exhausted, or no workspace reached): any inbox message
     * still pending settles with its unstored attachments as failed, so nothing stays pending.
     */
    async markFailed(inboundId: string, reason: string): Promise<void> {
      await settleAttachments(orm, inboundId);
      await orm.em
        .fork()
        .nativeUpdate(InboundMessage, { id: inboundId }, { status: 'failed', lastError: reason.slice(0, 1024), updatedAt: new Date() });
    },
  };
}

export type InboundIngestion = ReturnType<typeof createInboundIngestion>;
