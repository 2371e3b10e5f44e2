/**
 * RFC 3464 / RFC 6533 delivery-status and RFC 5965 feedback-report field parsing: turns the
 * machine-readable part of a report into per-recipient results. Pure.
 */
import {
  addressFromField,
  bounceTypeOf,
  cleanDiagnostic,
  fieldValue,
  fieldValues,
  parseAction,
  parseFieldBlocks,
  resolveStatus,
  stripTypePrefix,
  type BounceType,
  type ReportAction,
} from './report-fields.ts';

export interface ParsedRecipient {
  email: string;
  action: ReportAction | null;
  status: string | null;
  diagnostic: string | null;
  bounceType: BounceType | null;
}

export interface ParsedDeliveryStatus {
  reportingMta: string | null;
  recipients: ParsedRecipient[];
}

/**
 * Parses a delivery-status body: the first block holds per-message fields (Reporting-MTA),
 * each later block with a Final-Recipient or Original-Recipient is one recipient. Blocks
 * that repeat a recipient (some MTAs list it twice) are merged, keeping the first values.
 */
export function parseDeliveryStatus(text: string): ParsedDeliveryStatus {
  const blocks = parseFieldBlocks(text);
  let reportingMta: string | null = null;
  const recipients: ParsedRecipient[] = [];
  for (const block of blocks) {
    const mta = fieldValue(block, 'reporting-mta');
    if (mta && !reportingMta) reportingMta = stripTypePrefix(mta) || null;
    const email =
      addressFromField(fieldValue(block, 'final-recipient')) ??
      addressFromField(fieldValue(block, 'original-recipient')) ??
      addressFromField(fieldValue(block, 'x-actual-recipient'));
    if (!email) continue;
    const diagnostic = cleanDiagnostic(fieldValue(block, 'diagnostic-code'));
    const declared = parseAction(fieldValue(block, 'action'), null);
    const status = resolveStatus(
      fieldValue(block, 'status'),
      diagnostic,
      declared === null ? 'failed' : declared === 'delayed' ? 'delayed' : declared === 'failed' ? 'failed' : null,
    );
    const action = parseAction(fieldValue(block, 'action'), status);
    const existing = recipients.find((r) => r.email === email);
    if (existing) {
      existing.status ??= status;
      existing.diagnostic ??= diagnostic;
      existing.action ??= action;
      existing.bounceType = bounceTypeOf(existing.action, existing.status, existing.diagnostic);
      continue;
    }
    recipients.push({ email, action, status, diagnostic, bounceType: bounceTypeOf(action, status, diagnostic) });
  }
  return { reportingMta, recipients };
}

export interface ParsedFeedback {
  feedbackType: string | null;
  userAgent: string | null;
  recipients: string[];
}

/** Parses a message/feedback-report body (RFC 5965). */
export function parseFeedbackReport(text: string): ParsedFeedback {
  const fields = parseFieldBlocks(text).flat();
  const feedbackType = fieldValue(fields, 'feedback-type')?.toLowerCase().split(/[\s;]/)[0] ?? null;
  const userAgent = fieldValue(fields, 'user-agent');
  const recipients = [...fieldValues(fields, 'original-rcpt-to'), ...fieldValues(fields, 'removal-recipient')]
    .map((v) => addressFromField(v))
    .filter((v): v is string => v !== null);
  return { feedbackType: feedbackType || null, userAgent: userAgent || null, recipients: [...new Set(recipients)] };
}

/** The Message-ID (without <>) in a header block, or null. */
export function messageIdFromHeaders(headers: string): string | null {
  const match = /^message-id[ \t]*:[ \t]*(?:\r?\n[ \t]+)?<?([^\s<>]+@[^\s<>]+?)>?[ \t]*$/im.exec(headers);
  return match ? match[1]! : null;
}

/** The header block at the start of a message text (up to the first blank line). */
export function leadingHeaders(text: string): string {
  const end = text.search(/\r?\n\r?\n/);
  return end < 0 ? text : text.slice(0, end);
}
