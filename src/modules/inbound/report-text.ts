/**
 * Heuristics for bounces that are not RFC 3464 DSNs: the plain-text reports of Postfix,
 * Exim, qmail, Sendmail, Exchange/Outlook, Gmail, Yahoo and others. They find the failed
 * recipients (and a status where the text carries one) well enough to correlate; they never
 * decide on their own that an ordinary message is a bounce without a delivery-report
 * signature. Pure.
 */
import { parseDeliveryStatus, type ParsedRecipient } from './report-dsn.ts';
import { bounceTypeOf, enhancedStatus, normaliseAddress, replyCode, resolveStatus } from './report-fields.ts';
import { statusFromWording } from './report-status-text.ts';
import { vendorReport } from './report-vendors.ts';

export type TextFormat = 'postfix' | 'exim' | 'qmail' | 'exchange' | 'sendmail' | 'other';

export interface TextReportInput {
  text: string;
  subject: string;
  fromAddress: string | null;
  fromName: string | null;
  mailFrom: string;
  failedRecipientsHeader: string | null;
  /** The report's own header block, for shapes recognised by a header (fml's X-MLServer). */
  headerBlock: string;
  /** Addresses that are never the failed recipient (the report's own From/To, the envelope). */
  exclude: Set<string>;
}

export interface TextReport {
  kind: 'bounce' | 'delay';
  format: TextFormat;
  reportingMta: string | null;
  recipients: ParsedRecipient[];
}

const FORMAT_SIGNATURES: [TextFormat, RegExp][] = [
  ['qmail', /qmail-send program|This is the qmail|qmail[- ]send/i],
  [
    'exim',
    /This message was created automatically by mail delivery software|SMTP error from remote mail server|Mail delivery failed: returning message to sender|retry time not reached|all relevant MX records point to non-existent hosts|\bExim\b/i,
  ],
  [
    'postfix',
    /This is the (mail system|Postfix program) at host|Undelivered Mail Returned to Sender|\(in reply to (RCPT TO|end of DATA|MAIL FROM) command\)/i,
  ],
  [
    'exchange',
    /Delivery has failed to these recipients|did not reach (some or all of )?the intended recipient|Diagnostic information for administrators|Microsoft Exchange|RESOLVER\.[A-Z]{3}\.|The following recipient\(s\) (cannot|could not) be reached|Your message (wasn't|couldn't be|could not be) delivered to|Remote Server returned '/i,
  ],
  [
    'sendmail',
    /The following addresses had (permanent fatal|transient non-fatal) errors|Transcript of session follows|The original message was received at|Returned mail: see transcript/i,
  ],
];

const GENERIC_SIGNATURE =
  /Delivery to the following recipients? (failed|has been delayed)|could not be delivered to (one or more|the following)|wasn't able to deliver|(unable|not able) to deliver (your|the) message|message (could not|was not|wasn't|has not been) (be )?delivered|delivery (has |have )?failed|delivery status notification|returned mail|failure notice|non-?delivery (report|notification)|undeliverable|undelivered mail|permanent (error|failure)|delivery to .{1,200} failed|mail delivery (failed|failure|problem)|could not deliver|delivery problem|delivery failure|failed delivery|mail failure|bounce notification|error sending your (mail|message)|trouble delivering|not delivered to|unable to deliver|delayed mail|not yet been delivered|message delayed|delivery incomplete|delivery notification/i;

const DAEMON_LOCAL =
  /^(mailer-?daemon|mail-?daemon|postmaster|mdaemon|mail\.?delivery|maildelivery|bounces?|nobody|root|daemon|mail|double-bounce|mailer)$/i;

const DELAY =
  /delayed mail|delivery (status notification \(delay\)|delayed|delay)|has been delayed|not yet been delivered|has not been delivered yet|warning: (message .{0,200}delayed|could not send message)|transient non-fatal|mail delivery deferred|will (continue to )?(retry|try)|delay notification|still trying|is delayed/i;
const FINAL =
  /permanent(ly)?|fatal|given up|giving up|gave up|Undelivered Mail Returned|Mail delivery failed|could not be delivered|could not deliver|couldn't be delivered|failed permanently/i;

const ORIGINAL_MARKER =
  /^\s*(?:[-=*_]{2,}.*(?:original|copy of|message (?:headers|text|body) follow|undelivered message|returned message|your message (?:follows|reads|was)|headers? of|below this line|unsent message|message header|rfc822)|original message (?:headers|follows)|-+ ?original message ?-+|content-type:\s*message\/rfc822|(?:Return-Path|Received|DKIM-Signature|X-Original-To|Delivered-To|Message-ID|MIME-Version)\s*:\s)/im;

const ADDR = String.raw`[A-Za-z0-9._%+=&'/!#$^{}|~-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`;
const LINE_PATTERNS: RegExp[] = [
  new RegExp(String.raw`^\s*(?:<<<\s*)?(?:[245]\d\d[ -](?:[245]\.\d{1,3}\.\d{1,3}\s+)?)?<(${ADDR})>(?::|\.\.\.)?\s*(.*)$`),
  new RegExp(String.raw`^\s*"?(${ADDR})"?\s*(?::\s*(.*)|\s+on\s.*|\s*\(.*\)\s*|\s*<\1>\s*|\s*\[.*\]\s*)?$`),
  new RegExp(
    String.raw`^\s*(?:Failed|Original|Final|Unknown|Invalid|Bad|Target)?[- ]?(?:[Rr]ecipient|mail address|e-?mail address)(?:\s*address)?(?:\(s\))?\s*:\s*<?(${ADDR})>?\s*(.*)$`,
    'i',
  ),
  new RegExp(String.raw`RCPT TO:?\s*<(${ADDR})>:?\s*(.*)$`, 'i'),
  new RegExp(String.raw`^\s*(?:To|Addressed To)\s*:\s*<?(${ADDR})>?\s*$`, 'i'),
];

/** True when an address belongs to a mail system rather than a person. */
export function isDaemonAddress(address: string | null): boolean {
  if (!address) return false;
  return DAEMON_LOCAL.test(address.split('@')[0] ?? '');
}

function formatOf(haystack: string): TextFormat | null {
  for (const [format, signature] of FORMAT_SIGNATURES) if (signature.test(haystack)) return format;
  return null;
}

/** The report part of a bounce text: everything before the quoted original message. */
function reportSection(text: string): string {
  const match = ORIGINAL_MARKER.exec(text);
  return match && match.index > 0 ? text.slice(0, match.index) : text;
}

interface Candidate {
  email: string;
  lines: string[];
}

function collectCandidates(section: string, exclude: Set<string>, allowDaemon = false): Candidate[] {
  const lines = section.split(/\r\n|\r|\n/);
  const found: Candidate[] = [];
  let open: Candidate | null = null;
  for (const line of lines) {
    let matched = false;
    for (const pattern of LINE_PATTERNS) {
      const m = pattern.exec(line);
      if (!m) continue;
      const email = normaliseAddress(m[1]!);
      if (exclude.has(email) || (!allowDaemon && isDaemonAddress(email))) continue;
      matched = true;
      let candidate = found.find((c) => c.email === email);
      if (!candidate) {
        candidate = { email, lines: [] };
        found.push(candidate);
      }
      if (/(?:^|\s)[245]\d\d[\s-]|[245]\.\d/.test(line)) candidate.lines.push(line.trim());
      else if (m[2]?.trim()) candidate.lines.push(m[2].trim());
      open = candidate;
      break;
    }
    if (matched) continue;
    if (line.trim() === '') {
      if (open && open.lines.length > 0) open = null;
      continue;
    }
    if (open && open.lines.length < 12) open.lines.push(line.trim());
  }
  return found;
}

/** Fallback: every <address> in the report section, with its line as the diagnostic. */
function angleCandidates(section: string, exclude: Set<string>, allowDaemon = false): Candidate[] {
  const found: Candidate[] = [];
  for (const line of section.split(/\r\n|\r|\n/)) {
    if (/message-id|in-reply-to|references|^\W*(from|to|cc|date|sender)\s*:/i.test(line)) continue;
    for (const m of line.matchAll(new RegExp(String.raw`<(${ADDR})>`, 'g'))) {
      const email = normaliseAddress(m[1]!);
      if (exclude.has(email) || (!allowDaemon && isDaemonAddress(email)) || found.some((c) => c.email === email)) continue;
      found.push({ email, lines: [line.trim()] });
    }
  }
  return found;
}

/** The first line of a section that carries a status code, for single-recipient reports. */
function sectionDiagnostic(section: string): string | null {
  const lines = section.split(/\r\n|\r|\n/).map((l) => l.trim());
  return (
    lines.find((l) => enhancedStatus(l)) ??
    lines.find((l) => replyCode(l) && /[a-z]{3}/i.test(l)) ??
    lines.find((l) => /^(?:reject(?:ion)? reason|reason|error|diagnostic)\s*:/i.test(l)) ??
    null
  );
}

function reportingMtaOf(text: string): string | null {
  const m =
    /(?:This is the (?:mail system|Postfix program|qmail-send program) at (?:host )?|Reporting-MTA:\s*(?:dns;\s*)?|Generating server:\s*)([A-Za-z0-9.-]+[A-Za-z0-9])/i.exec(
      text,
    );
  return m ? m[1]!.toLowerCase() : null;
}

/**
 * Recognises a non-DSN bounce or delay notice; null when the message does not look like
 * one. A message counts as a report when it carries an MTA's boilerplate, an
 * X-Failed-Recipients header, or generic bounce wording from a mail-system sender.
 */
export function classifyTextReport(input: TextReportInput): TextReport | null {
  const haystack = `${input.subject}\n${input.text}`;
  const format = formatOf(haystack);
  const vendor = vendorReport(`${input.headerBlock}\n${haystack}`, input.text);
  const nullSender = input.mailFrom.trim() === '' || input.mailFrom.trim() === '<>';
  const daemonSender =
    isDaemonAddress(input.fromAddress) || /mail delivery (system|subsystem)|mailer[- ]daemon|postmaster/i.test(input.fromName ?? '');
  const generic = GENERIC_SIGNATURE.test(haystack);
  if (!format && !vendor && !input.failedRecipientsHeader && !(generic && (daemonSender || nullSender))) return null;

  const section = reportSection(input.text);
  const delayed = DELAY.test(`${input.subject}\n${section}`) && !FINAL.test(`${input.subject}\n${section}`);
  const action = delayed ? 'delayed' : 'failed';
  let recipients: ParsedRecipient[] = [];
  if (/^(Final|Original)-Recipient\s*:/im.test(section)) {
    recipients = parseDeliveryStatus(section).recipients.filter((r) => !input.exclude.has(r.email));
  }
  if (recipients.length === 0 && vendor) {
    const found = vendor.filter((r) => !input.exclude.has(r.email));
    recipients = found.map((r) => textRecipient(r.email, r.diagnostic, action, found.length === 1 ? section : null));
  }
  if (recipients.length === 0) {
    const candidates = textCandidates(section, input);
    const single = candidates.length === 1 ? sectionDiagnostic(section) : null;
    recipients = candidates.map((c) => {
      let diagnostic = c.lines.join(' ').replace(/\s+/g, ' ').trim().slice(0, 1000) || null;
      if (single && single !== diagnostic && !enhancedStatus(diagnostic) && !replyCode(diagnostic))
        diagnostic = diagnostic ? `${diagnostic} ${single}` : single;
      const hint = diagnostic ?? (format === 'qmail' && /permanent error/i.test(section) ? 'permanent error' : null);
      return textRecipient(c.email, diagnostic, action, candidates.length === 1 ? section : null, hint ?? sectionHint(section));
    });
  }
  return { kind: delayed ? 'delay' : 'bounce', format: format ?? 'other', reportingMta: reportingMtaOf(input.text), recipients };
}

/**
 * Recipients named in a report section: address lines first, else any `<address>`, else the
 * X-Failed-Recipients header; mail-system addresses only when nothing else is named.
 */
function textCandidates(section: string, input: TextReportInput): Candidate[] {
  const candidates = collectCandidates(section, input.exclude);
  if (candidates.length === 0) candidates.push(...angleCandidates(section, input.exclude));
  const fromHeader = (input.failedRecipientsHeader ?? '')
    .split(/[,\s]+/)
    .map((a) => normaliseAddress(a))
    .filter((a) => a.includes('@') && !input.exclude.has(a));
  for (const email of fromHeader) if (!candidates.some((c) => c.email === email)) candidates.push({ email, lines: [] });
  if (candidates.length > 0) return candidates;
  const daemons = collectCandidates(section, input.exclude, true);
  return daemons.length > 0 ? daemons : angleCandidates(section, input.exclude, true);
}

/**
 * One recipient of a text report. Without a code in its own diagnostic, the status comes from
 * the wording of the whole report when it names this recipient alone (`reportText`).
 */
function textRecipient(
  email: string,
  diagnostic: string | null,
  action: 'failed' | 'delayed',
  reportText: string | null,
  hint: string | null = diagnostic,
): ParsedRecipient {
  const status = resolveStatus(null, diagnostic, action) ?? statusFromWording(reportText, action, true);
  return { email, action, status, diagnostic, bounceType: bounceTypeOf(action, status, hint) };
}

/** Report-wide wording used for hard/soft when a recipient has no diagnostic of its own. */
function sectionHint(section: string): string | null {
  if (/permanent|fatal/i.test(section)) return 'permanent';
  return null;
}
