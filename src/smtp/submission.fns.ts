import type { AddressObject, ParsedMail } from 'mailparser';
import type { AppError } from '../errors.ts';
import { isReservedHeader } from '../modules/sends/sends.fns.ts';

/**
 * The SMTP submission front door's translation: a message a mail client submitted becomes the
 * body of a POST /outbox/emails (validated by the same schema), and a refusal of the API
 * becomes an SMTP reply. Pure functions, unit-tested.
 */

/** A reply as smtp-server takes it: an Error with `responseCode`. */
export function smtpReply(code: number, text: string): Error & { responseCode: number } {
  return Object.assign(new Error(text), { responseCode: code });
}

const addressesOf = (field: AddressObject | AddressObject[] | undefined): { address: string; name: string }[] =>
  (Array.isArray(field) ? field : field ? [field] : [])
    .flatMap((object) => object.value)
    .flatMap((entry) => (entry.address ? [{ address: entry.address, name: entry.name }] : []));

/** The header a submitted message asks for tracking with: `X-Herald-Track: opens, clicks` (either or both; `none` or absent for neither). */
export const TRACK_HEADER = 'x-herald-track';

/** The `tracking` of the send request from TRACK_HEADER, or undefined when the message does not carry it. */
export function trackingOf(parsed: Pick<ParsedMail, 'headers'>): { opens: boolean; clicks: boolean } | undefined {
  const value = parsed.headers.get(TRACK_HEADER);
  if (typeof value !== 'string') return undefined;
  const words = new Set(
    value
      .toLowerCase()
      .split(/[\s,]+/)
      .filter(Boolean),
  );
  return { opens: words.has('opens'), clicks: words.has('clicks') };
}

/** Headers a submitted message keeps: any the API accepts (not reserved by Herald), single-line, in the API's bound. */
/** The header a submitted message names its message stream with; Herald reads it and strips it before delivery. */
export const STREAM_HEADER = 'x-herald-stream';

function keptHeaders(parsed: ParsedMail): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const line of parsed.headerLines) {
    const name = line.line.slice(0, line.line.indexOf(':')).trim();
    if (
      !name ||
      isReservedHeader(name) ||
      name.toLowerCase().startsWith('content-') ||
      name.toLowerCase() === STREAM_HEADER ||
      name.toLowerCase() === TRACK_HEADER
    )
      continue;
    const value = line.line
      .slice(line.line.indexOf(':') + 1)
      .replace(/\r?\n[ \t]+/g, ' ')
      .trim();
    if (value.length > 0 && value.length <= 4000 && Object.keys(kept).length < 50) kept[name] = value;
  }
  return kept;
}

/**
 * The send request for a submitted message: From (or the envelope sender) as `from`; the
 * envelope recipients as to, cc (those in the To and Cc headers) and bcc (the others); subject,
 * bodies, Reply-To, the headers the API allows (In-Reply-To and References thread it), the
 * message stream X-Herald-Stream names and tracking as X-Herald-Track asks (neither header is kept), and the attachments (inline, by content id when the HTML embeds them). Throws 550 for a message that
 * cannot become one: no recipient in To, no Subject.
 */
export function sendRequestOf(parsed: ParsedMail, envelope: { mailFrom: string | null; rcptTo: string[] }): Record<string, unknown> {
  const from = addressesOf(parsed.from)[0];
  const inTo = new Set(addressesOf(parsed.to).map((a) => a.address.toLowerCase()));
  const inCc = new Set(addressesOf(parsed.cc).map((a) => a.address.toLowerCase()));
  const rcpt = envelope.rcptTo.map((address) => address.toLowerCase());
  const to = rcpt.filter((address) => inTo.has(address));
  if (to.length === 0) throw smtpReply(550, '5.5.1 At least one envelope recipient must be in the To header');
  if (!parsed.subject) throw smtpReply(550, '5.6.0 A Subject header is required');
  const replyTo = addressesOf(parsed.replyTo)[0];
  const attachments = parsed.attachments.map((attachment) => ({
    filename: attachment.filename ?? `attachment-${attachment.checksum.slice(0, 8)}`,
    content: attachment.content.toString('base64'),
    content_type: attachment.contentType,
    ...(attachment.contentId && attachment.related ? { content_id: attachment.contentId.replace(/^<|>$/g, '') } : {}),
  }));
  const headers = keptHeaders(parsed);
  const stream = parsed.headers.get(STREAM_HEADER);
  const tracking = trackingOf(parsed);
  return {
    from: from ? (from.name ? `"${from.name.replace(/(["\\])/g, '\\$1')}" <${from.address}>` : from.address) : (envelope.mailFrom ?? ''),
    to,
    ...(rcpt.some((a) => inCc.has(a) && !inTo.has(a)) ? { cc: rcpt.filter((a) => inCc.has(a) && !inTo.has(a)) } : {}),
    ...(rcpt.some((a) => !inTo.has(a) && !inCc.has(a)) ? { bcc: rcpt.filter((a) => !inTo.has(a) && !inCc.has(a)) } : {}),
    subject: parsed.subject.replace(/[\r\n]+/g, ' '),
    ...(typeof parsed.html === 'string' && parsed.html.length > 0 ? { html: parsed.html } : {}),
    ...(parsed.text ? { text: parsed.text } : {}),
    ...(replyTo ? { reply_to: replyTo.address } : {}),
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(attachments.length > 0 ? { attachments } : {}),
    ...(typeof stream === 'string' && stream.trim() ? { stream: stream.trim().toLowerCase() } : {}),
    ...(tracking ? { tracking } : {}),
  };
}

/**
 * The SMTP reply for a refusal of the send: 550 for what the message or the sender must change
 * (invalid message, unknown or unverified domain, suppressed recipient, no credits), 552 for
 * size, 451 for what may pass later (rate or daily cap, a dependency down).
 */
export function replyForRefusal(error: AppError): Error & { responseCode: number } {
  const reason = typeof error.details?.reason === 'string' ? ` (${error.details.reason})` : '';
  const text = `${error.message}${reason}`.replace(/[\r\n]+/g, ' ');
  switch (error.code) {
    case 'payload_too_large':
      return smtpReply(552, `5.3.4 ${text}`);
    case 'rate_limited':
      return smtpReply(451, `4.7.1 ${text}`);
    case 'invalid_request':
      return smtpReply(550, `5.6.0 ${text}`);
    case 'forbidden':
    case 'payment_required':
    case 'missing_scope':
      return smtpReply(550, `5.7.1 ${text}`);
    default:
      return error.status >= 500 ? smtpReply(451, '4.3.0 Temporary failure, try again later') : smtpReply(550, `5.7.1 ${text}`);
  }
}
