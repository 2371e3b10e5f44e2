/**
 * Amazon SES notifications forwarded by SNS to an email endpoint ("AWS Notification
 * Message"): a JSON document in a text/plain body, with `notificationType` Bounce, Complaint or
 * Delivery. SNS folds its long line with `!` + newline + space, which is undone first. Pure.
 */
import { bounceTypeOf, cleanDiagnostic, normaliseAddress, parseAction, resolveStatus } from './report-fields.ts';
import type { ParsedRecipient } from './report-dsn.ts';

export type SesNotification =
  | { kind: 'bounce' | 'delay'; reportingMta: string | null; originalMessageId: string | null; recipients: ParsedRecipient[] }
  | { kind: 'complaint'; feedbackType: string | null; userAgent: string | null; originalMessageId: string | null; recipients: string[] }
  | { kind: 'delivery' };

interface SesJson {
  notificationType?: unknown;
  bounce?: {
    bounceType?: unknown;
    reportingMTA?: unknown;
    bouncedRecipients?: { emailAddress?: unknown; action?: unknown; status?: unknown; diagnosticCode?: unknown }[];
  };
  complaint?: { complainedRecipients?: { emailAddress?: unknown }[]; complaintFeedbackType?: unknown; userAgent?: unknown };
  mail?: { headers?: { name?: unknown; value?: unknown }[] };
}

const str = (value: unknown): string | null => (typeof value === 'string' && value.trim() !== '' ? value.trim() : null);

/** The notification object, also when it is the `Message` string of an SNS envelope. */
function parseJson(text: string): SesJson | null {
  const unfolded = text.replace(/!\r?\n /g, '');
  const start = unfolded.indexOf('{');
  const end = unfolded.lastIndexOf('}');
  if (start < 0 || end < start) return null;
  try {
    const value: unknown = JSON.parse(unfolded.slice(start, end + 1));
    if (!value || typeof value !== 'object') return null;
    const message = (value as { Message?: unknown }).Message;
    return typeof message === 'string' ? parseJson(message) : value;
  } catch {
    return null;
  }
}

function bounceRecipients(json: SesJson): ParsedRecipient[] {
  const transient = str(json.bounce?.bounceType) === 'Transient';
  return (json.bounce?.bouncedRecipients ?? []).flatMap((r) => {
    const email = str(r.emailAddress);
    if (!email) return [];
    const diagnostic = cleanDiagnostic(str(r.diagnosticCode));
    const status = resolveStatus(str(r.status), diagnostic, transient ? 'delayed' : 'failed');
    const action = parseAction(str(r.action) ?? (transient ? 'delayed' : 'failed'), status);
    return [{ email: normaliseAddress(email), action, status, diagnostic, bounceType: bounceTypeOf(action, status, diagnostic) }];
  });
}

/** The SES notification a message body carries, or null when it is not one. */
export function parseSesNotification(text: string): SesNotification | null {
  if (!text.includes('notificationType')) return null;
  const json = parseJson(text);
  if (!json) return null;
  const header = json.mail?.headers?.find((h) => str(h.name)?.toLowerCase() === 'message-id');
  const originalMessageId = str(header?.value)?.replace(/^<|>$/g, '') ?? null;
  switch (json.notificationType) {
    case 'Bounce': {
      const recipients = bounceRecipients(json);
      const kind = recipients.some((r) => r.action === 'failed') || recipients.length === 0 ? 'bounce' : 'delay';
      const mta = str(json.bounce?.reportingMTA);
      return { kind, reportingMta: mta ? mta.replace(/^dsn;\s*/i, '') : null, originalMessageId, recipients };
    }
    case 'Complaint':
      return {
        kind: 'complaint',
        feedbackType: str(json.complaint?.complaintFeedbackType),
        userAgent: str(json.complaint?.userAgent),
        originalMessageId,
        recipients: (json.complaint?.complainedRecipients ?? []).flatMap((r) => {
          const email = str(r.emailAddress);
          return email ? [normaliseAddress(email)] : [];
        }),
      };
    case 'Delivery':
      return { kind: 'delivery' };
    default:
      return null;
  }
}
