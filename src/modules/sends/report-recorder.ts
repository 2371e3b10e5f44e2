import type { EntityManager } from '@mikro-orm/postgresql';
import { EmailRecipient, TransactionalEmail } from '../../../db/entities/index.ts';
import { recordEvent } from '../events/events.fns.ts';
import { emailIdFromMessageId, type InboundReport } from '../inbound/report-classifier.ts';
import { recordEmailEvents, type EmailEventInput } from '../metrics/email-events.ts';
import { applyRecipientOutcome, emailEventData } from './outcomes.ts';

export interface AppliedReport {
  emailId: string | null;
  /** Recipients whose state the report changed (or, for a delay, reported on). */
  recipients: string[];
}

async function findEmail(em: EntityManager, orgId: string, report: Extract<InboundReport, { emailId: string | null }>): Promise<TransactionalEmail | null> {
  const byVerp = report.emailId ? await em.findOne(TransactionalEmail, { id: report.emailId, orgId }) : null;
  if (byVerp) return byVerp;
  if (!report.originalMessageId) return null;
  const fromMessageId = emailIdFromMessageId(report.originalMessageId);
  if (fromMessageId) {
    const found = await em.findOne(TransactionalEmail, { id: fromMessageId, orgId });
    if (found) return found;
  }
  return em.findOne(TransactionalEmail, { messageId: report.originalMessageId.replace(/^<|>$/g, ''), orgId });
}

/**
 * Turns an asynchronous delivery report that arrived over inbound SMTP into delivery state, in
 * the transaction that records its inbox message (`em` scoped to the workspace). The email is
 * found by the VERP address, else by the quoted Herald Message-ID. A DSN `failed` →
 * email.bounced for that recipient (hard: suppressed, contact bounced); a DSN `delayed` →
 * email.deferred (the recipient keeps its status: the remote side is still retrying); an ARF
 * report → email.complained (suppressed, contact complained). A report about no email of this
 * workspace changes nothing (the message stays in the inbox).
 */
export async function applyInboundReport(em: EntityManager, orgId: string, report: InboundReport, _inboxMessageId: string): Promise<AppliedReport> {
  if (report.kind === 'message' || report.kind === 'auto_reply') return { emailId: null, recipients: [] };
  const email = await findEmail(em, orgId, report);
  if (!email) return { emailId: null, recipients: [] };
  const rows = await em.find(EmailRecipient, { emailId: email.id }, { orderBy: { id: 'asc' } });
  const byAddress = new Map(rows.map((r) => [r.email, r]));
  // A report naming no known recipient of a single-recipient email is about that recipient.
  const resolve = (address: string | null | undefined) => (address ? byAddress.get(address.toLowerCase()) : undefined) ?? (rows.length === 1 ? rows[0] : undefined);
  const changed: string[] = [];
  const metrics: EmailEventInput[] = [];
  const now = new Date();

  if (report.kind === 'complaint') {
    const addresses = report.recipients.length > 0 ? report.recipients : [null];
    for (const address of addresses) {
      const row = resolve(address);
      if (!row || row.status === 'complained') continue;
      await applyRecipientOutcome(em, email, row, { type: 'complained', feedbackType: report.feedbackType }, metrics, now);
      changed.push(row.email);
    }
    await recordEmailEvents(em, metrics);
    return { emailId: email.id, recipients: changed };
  }

  for (const entry of report.recipients.length > 0 ? report.recipients : [null]) {
    const row = resolve(entry?.email);
    if (!row) continue;
    const diagnostic = entry?.diagnostic ?? entry?.status ?? null;
    if (report.kind === 'delay' || entry?.action === 'delayed') {
      metrics.push({ orgId, type: 'deferred', recipient: row.email, domain: email.domain, emailId: email.id, broadcastId: email.broadcastId, occurredAt: now });
      recordEvent(em, orgId, 'email.deferred', {
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
    await applyRecipientOutcome(em, email, row, { type: 'bounced', bounceType: entry?.bounceType ?? 'soft', response: diagnostic, code }, metrics, now);
    changed.push(row.email);
  }
  await em.flush();
  await recordEmailEvents(em, metrics);
  return { emailId: email.id, recipients: changed };
}
