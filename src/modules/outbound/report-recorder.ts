import type { EntityManager } from '@mikro-orm/postgresql';
import { EmailRecipient, TransactionalEmail } from '../../../db/entities/index.ts';
import { inboundReportsTotal } from '../../metrics/metrics.ts';
import { recordEvent } from '../events/events.fns.ts';
import type { InboundReport } from '../inbound/report-classifier.ts';
import type { InboundRoute } from '../inbound/routing.ts';
import { recordEmailEvents, type EmailEventInput } from '../metrics/email-events.ts';
import { applyRecipientOutcome, emailEventData } from './outcomes.ts';
import { messageIdFor } from '../sends/sends.fns.ts';

/** Why a report changed nothing (the `result` label of herald_inbound_reports_total besides `applied`). */
export type UnappliedReason =
  /** It did not arrive at a return path Herald signed (a domain address, a quoted Message-ID alone). */
  | 'no_signed_return_path'
  /** The signed return path names an email that no longer exists. */
  | 'unknown_email'
  /** The report quotes a Message-ID that is not the one of the email its return path names. */
  | 'message_id_mismatch'
  /** It names no recipient of that email (or none at all). */
  | 'unknown_recipient'
  /** Every recipient it names is already in the state it reports. */
  | 'already_applied';

export interface AppliedReport {
  emailId: string | null;
  /** Recipients whose state the report changed (or, for a delay, reported on). */
  recipients: string[];
  /** Set when nothing changed. */
  unapplied?: UnappliedReason;
}

const bareMessageId = (value: string) => value.trim().replace(/^<|>$/g, '').toLowerCase();

/**
 * Turns an asynchronous delivery report that arrived over inbound SMTP into delivery state, in
 * the transaction that records its inbox message (`em` scoped to the workspace). Only a report
 * that reached Herald at a return path it signed (`route.emailId`, verified by routing) is
 * applied, and only to that email: when the report quotes the original Message-ID it must be
 * that email's; each recipient it names must be a recipient of that email (a report naming
 * someone else changes nothing). A report that names no recipient at all (complaint feedback
 * loops redact them) is about the email's recipient when it had exactly one. A DSN `failed` →
 * email.bounced for that recipient (hard: suppressed, contact bounced); a DSN `delayed` →
 * email.deferred (the recipient keeps its status: the remote side is still retrying); an ARF
 * report → email.complained (suppressed, contact complained). A report that changes nothing
 * stays in the inbox and is counted with its reason (herald_inbound_reports_total).
 */
export async function applyInboundReport(
  em: EntityManager,
  route: InboundRoute,
  report: InboundReport,
  _inboxMessageId: string,
): Promise<AppliedReport> {
  if (report.kind === 'message' || report.kind === 'auto_reply') return { emailId: null, recipients: [] };
  const result = await applyProvenReport(em, route, report);
  inboundReportsTotal.inc({ kind: report.kind, result: result.unapplied ?? 'applied' });
  return result;
}

async function applyProvenReport(
  em: EntityManager,
  route: InboundRoute,
  report: Exclude<InboundReport, { kind: 'message' | 'auto_reply' }>,
): Promise<AppliedReport> {
  const unapplied = (reason: UnappliedReason, emailId: string | null = null): AppliedReport => ({
    emailId,
    recipients: [],
    unapplied: reason,
  });
  if (!route.emailId) return unapplied('no_signed_return_path');
  const email = await em.findOne(TransactionalEmail, { id: route.emailId, orgId: route.orgId });
  if (!email) return unapplied('unknown_email');
  if (report.originalMessageId) {
    const quoted = bareMessageId(report.originalMessageId);
    if (quoted !== bareMessageId(email.messageId) && quoted !== bareMessageId(messageIdFor(email.id, email.domain)))
      return unapplied('message_id_mismatch', email.id);
  }
  const rows = await em.find(EmailRecipient, { emailId: email.id }, { orderBy: { id: 'asc' } });
  const byAddress = new Map(rows.map((r) => [r.email, r]));
  const resolve = (address: string | null | undefined) =>
    address ? byAddress.get(address.toLowerCase()) : rows.length === 1 ? rows[0] : undefined;
  const changed: string[] = [];
  let matched = 0;
  const metrics: EmailEventInput[] = [];
  const now = new Date();

  if (report.kind === 'complaint') {
    const addresses = report.recipients.length > 0 ? report.recipients : [null];
    for (const address of addresses) {
      const row = resolve(address);
      if (!row) continue;
      matched += 1;
      if (row.status === 'complained') continue;
      await applyRecipientOutcome(em, email, row, { type: 'complained', feedbackType: report.feedbackType }, metrics, now);
      changed.push(row.email);
    }
    await recordEmailEvents(em, metrics);
    return changed.length > 0
      ? { emailId: email.id, recipients: changed }
      : unapplied(matched > 0 ? 'already_applied' : 'unknown_recipient', email.id);
  }

  for (const entry of report.recipients.length > 0 ? report.recipients : [null]) {
    const row = resolve(entry?.email);
    if (!row) continue;
    matched += 1;
    const diagnostic = entry?.diagnostic ?? entry?.status ?? null;
    if (report.kind === 'delay' || entry?.action === 'delayed') {
      metrics.push({
        orgId: route.orgId,
        type: 'deferred',
        recipient: row.email,
        domain: email.domain,
        emailId: email.id,
        broadcastId: email.broadcastId,
        occurredAt: now,
      });
      recordEvent(em, route.orgId, 'email.deferred', {
        ...emailEventData(email, row.email, now),
        reason: diagnostic ?? 'delivery delayed (DSN)',
        next_attempt_at: null,
      });
      changed.push(row.email);
      continue;
    }
    if (entry && entry.action !== null && entry.action !== 'failed') continue;
    if (row.status === 'bounced' || row.status === 'complained') continue;
    const code = entry?.status ? Number(entry.status.charAt(0)) * 100 : null;
    await applyRecipientOutcome(
      em,
      email,
      row,
      { type: 'bounced', bounceType: entry?.bounceType ?? 'soft', response: diagnostic, code },
      metrics,
      now,
    );
    changed.push(row.email);
  }
  await em.flush();
  await recordEmailEvents(em, metrics);
  return changed.length > 0
    ? { emailId: email.id, recipients: changed }
    : unapplied(matched > 0 ? 'already_applied' : 'unknown_recipient', email.id);
}
