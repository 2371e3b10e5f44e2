import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { InboxMessageKind } from '../../../db/entities/index.ts';
import { newId } from '../../../db/ids.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { Logger } from '../../logger.ts';
import { fireEmailReply } from '../automations/automation-triggers.ts';
import type { AutomationWaker } from '../automations/automation-wake.ts';
import { participantsOf, replyCandidates } from '../inbox/threading.ts';
import type { AuthResultsSummary } from './auth-results.ts';
import { autoReplyReason } from './auto-reply.ts';
import type { RawInbound } from './inbound-queue.repo.ts';
import { beginRecording, insertInboundMessage, type NewInboundMessage } from './record-inbox-message.repo.ts';
import type { ParsedMessage } from './mime.ts';
import { appliesReport, type InboundReportHooks, type InboundReportLike } from './reports-hook.ts';
import type { InboundRoute } from './routing.ts';

/** What recording an inbox message needs: the database, the report hooks, where to log, whom to wake. */
export interface RecordDeps {
  orm: MikroORM;
  reports?: InboundReportHooks | undefined;
  logger?: Logger | undefined;
  wakeAutomations?: AutomationWaker | undefined;
}

/** The `email.received` event's data; its `message.thread_id` is the placed thread's (insertInboundMessage). */
function emailReceivedData(message: NewInboundMessage) {
  return {
    message: {
      id: message.id,
      thread_id: null,
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
 * Applies a bounce/complaint report inside a savepoint of the message's transaction. A failure
 * fails the step (retried) until the final attempt; then the message is recorded without the
 * report's effects rather than lost.
 */
export async function applyReport(
  deps: { reports: InboundReportHooks; logger?: Logger | undefined },
  em: EntityManager,
  route: InboundRoute,
  report: InboundReportLike,
  messageId: string,
  final: boolean,
): Promise<void> {
  try {
    const applied = await em.transactional((savepoint) => deps.reports.apply!(savepoint, route, report, messageId));
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

/** What the raw message says, as parsed, checked and classified once for every workspace it reaches. */
export interface ReadMessage {
  parsed: ParsedMessage;
  auth: AuthResultsSummary;
  report: InboundReportLike | null;
}

/**
 * One inbox message in one workspace, with its thread, event and report, in one transaction;
 * a message (not a report, nor an automatic answer such as an out-of-office: auto-reply.ts)
 * that answers an email Herald sent fires its automation triggers there too
 * (automation-triggers.ts fireEmailReply), and the automations are woken after.
 * `settlesRaw`: this is the raw message's last step, so the same transaction marks it ingested.
 * `final`: the last attempt, which records the message even if applying its report fails.
 */
export async function recordForWorkspace(
  deps: RecordDeps,
  inbound: RawInbound,
  route: InboundRoute,
  { parsed, auth, report }: ReadMessage,
  { final, settlesRaw }: { final: boolean; settlesRaw: boolean },
): Promise<string> {
  const { id, touched } = await scopeToOrg(deps.orm.em, route.orgId).transactional(async (em: EntityManager) => {
    const participants = participantsOf([parsed.from?.email, ...parsed.to.map((a) => a.email), ...parsed.cc.map((a) => a.email)]);
    const thread = { subject: parsed.subject, participants };
    const existing = await beginRecording(em, { inboundId: inbound.id, orgId: route.orgId, thread, settlesRaw });
    if (existing) return { id: existing, touched: [] };
    const kind: InboxMessageKind = report?.kind ?? 'message';
    const message: NewInboundMessage = {
      id: newId(),
      orgId: route.orgId,
      inboundId: inbound.id,
      kind,
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
      attachmentCount: parsed.attachments.length,
      authResults: auth,
      sentAt: parsed.date,
      createdAt: inbound.createdAt,
      updatedAt: new Date(),
    };
    const placing = { ...thread, inReplyTo: parsed.inReplyTo, references: parsed.references, at: inbound.createdAt };
    const event = kind === 'message' ? { type: 'email.received', data: emailReceivedData(message) } : null;
    await insertInboundMessage(em, message, placing, event);
    if (report && deps.reports?.apply && appliesReport(kind))
      await applyReport({ reports: deps.reports, logger: deps.logger }, em, route, report, message.id, final);
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
