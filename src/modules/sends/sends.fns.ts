import type { RecipientKind } from '../../../db/entities/index.ts';

export interface ParsedFrom {
  email: string;
  name: string | null;
  domain: string;
}

const HOST = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;
/** Any local part a relay will carry: printable, no spaces outside quotes, no angle brackets. */
const LOCAL_PART = /^(?:[^\s<>@"()\\,;:[\]]+|"(?:[^"\\\r\n]|\\.)+")$/;

/**
 * `addr@host` or `Display Name <addr@host>` (the name optionally in double quotes). Any local
 * part is allowed; the host is lower-cased and must be a domain name. Null when malformed.
 */
export function parseFromAddress(value: string): ParsedFrom | null {
  const text = value.trim();
  if (/[\r\n]/.test(text)) return null;
  let name: string | null = null;
  let address = text;
  const angle = /^(.*?)\s*<([^<>]+)>$/.exec(text);
  if (angle) {
    let display = (angle[1] ?? '').trim();
    if (display.startsWith('"') && display.endsWith('"') && display.length >= 2) display = display.slice(1, -1).replace(/\\(.)/g, '$1');
    name = display.length > 0 ? display : null;
    address = (angle[2] ?? '').trim();
  }
  const at = address.lastIndexOf('@');
  if (at <= 0) return null;
  const local = address.slice(0, at);
  const domain = address.slice(at + 1).toLowerCase();
  if (local.length > 64 || !LOCAL_PART.test(local) || !HOST.test(domain)) return null;
  return { email: `${local}@${domain}`, name, domain };
}

export interface EnvelopeRecipient {
  kind: RecipientKind;
  email: string;
}

/**
 * The envelope: to, cc, bcc in order, lower-cased, each address once (the first field it
 * appears in wins, so an address in both to and bcc is delivered once, visibly).
 */
export function envelopeRecipients(to: string | string[], cc: string[] = [], bcc: string[] = []): EnvelopeRecipient[] {
  const seen = new Set<string>();
  const out: EnvelopeRecipient[] = [];
  const add = (kind: RecipientKind, list: string[]) => {
    for (const raw of list) {
      const email = raw.trim().toLowerCase();
      if (seen.has(email)) continue;
      seen.add(email);
      out.push({ kind, email });
    }
  };
  add('to', typeof to === 'string' ? [to] : to);
  add('cc', cc);
  add('bcc', bcc);
  return out;
}

/**
 * Headers a client may not set: Herald owns identity, addressing, structure and trace headers
 * (Message-ID always; From/To/Cc/Bcc/Subject/Reply-To come from their fields; Sender, aligned
 * or not, since From is the one identity a send has; MIME structure
 * from the bodies and attachments; DKIM and trace headers from delivery).
 */
export const RESERVED_HEADERS = new Set([
  'message-id',
  'from',
  'to',
  'cc',
  'bcc',
  'subject',
  'reply-to',
  'date',
  'sender',
  'return-path',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
  'content-disposition',
  'dkim-signature',
  'received',
  'authentication-results',
  'arc-seal',
  'arc-message-signature',
  'arc-authentication-results',
  'delivered-to',
  'x-herald-email-id',
]);

/**
 * Whether Herald owns a header name (case-insensitively): RESERVED_HEADERS, and every `Resent-*`
 * field (RFC 5322 3.6.6), which would claim a resending identity the domain did not give.
 */
export function isReservedHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return RESERVED_HEADERS.has(lower) || lower.startsWith('resent-');
}

/** The custom header names that are reserved (isReservedHeader), in request order. */
export function reservedHeaderNames(headers: Record<string, string>): string[] {
  return Object.keys(headers).filter(isReservedHeader);
}

/** A problem with a custom header's value, as a field of a 400. */
export interface HeaderProblem {
  name: string;
  message: string;
}

const ONE_CLICK = 'List-Unsubscribe=One-Click';

/**
 * List-Unsubscribe (RFC 2369) and List-Unsubscribe-Post (RFC 8058) on a transactional email,
 * when the sender sets them: List-Unsubscribe is a comma-separated list of `<https://…>` and
 * `<mailto:…>` URIs; List-Unsubscribe-Post is exactly `List-Unsubscribe=One-Click` and needs an
 * https URI beside it. Returns what is wrong (empty when nothing is).
 */
export function listUnsubscribeProblems(headers: Record<string, string>): HeaderProblem[] {
  const find = (wanted: string) => Object.entries(headers).find(([name]) => name.toLowerCase() === wanted);
  const list = find('list-unsubscribe');
  const post = find('list-unsubscribe-post');
  const problems: HeaderProblem[] = [];
  const uris: string[] = [];
  if (list) {
    const items = list[1].split(',').map((item) => item.trim());
    for (const item of items) {
      const uri = /^<([^<>\s]+)>$/.exec(item)?.[1];
      const valid =
        uri !== undefined && (/^mailto:[^@\s]+@[^@\s]+$/i.test(uri) || (URL.canParse(uri) && new URL(uri).protocol === 'https:'));
      if (!valid) {
        problems.push({ name: list[0], message: 'must be a comma-separated list of <https://…> or <mailto:…> URIs' });
        break;
      }
      uris.push(uri);
    }
  }
  if (post) {
    if (post[1].trim() !== ONE_CLICK) problems.push({ name: post[0], message: `must be exactly ${ONE_CLICK}` });
    else if (!uris.some((uri) => uri.toLowerCase().startsWith('https:'))) {
      problems.push({ name: post[0], message: 'needs a List-Unsubscribe header with an https URI (RFC 8058)' });
    }
  }
  return problems;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Strict base64 (standard alphabet; line breaks allowed and ignored; padding optional but
 * consistent). Null when the text is not base64, rather than Node's lenient skipping.
 */
export function decodeBase64(content: string): Buffer | null {
  const compact = content.replace(/\r?\n/g, '');
  if (!BASE64.test(compact) || compact.length % 4 === 1) return null;
  const unpadded = compact.replace(/=+$/, '');
  if (compact.length % 4 !== 0 && compact.length !== unpadded.length) return null;
  return Buffer.from(compact, 'base64');
}

/** Decoded size of base64 text without decoding it (for the 12 MB check before allocating). */
export function base64DecodedLength(content: string): number {
  const compact = content.replace(/\r?\n/g, '');
  const padding = compact.endsWith('==') ? 2 : compact.endsWith('=') ? 1 : 0;
  return Math.floor((compact.length * 3) / 4) - padding;
}

/** Herald's Message-ID (no angle brackets): `<emailId>.0@<sending domain>`; replies thread by it. */
export function messageIdFor(emailId: string, domain: string): string {
  return `${emailId}.0@${domain}`;
}

/**
 * The host of a sending domain's envelope sender: `bounces.<domain>`, the CNAME to BOUNCE_DOMAIN
 * the domain's records ask for, so SPF is checked for a subdomain of the From domain and aligns
 * with it (DMARC, relaxed), and bounces still reach Herald.
 */
export function bounceHostOf(sendingDomain: string): string {
  return `bounces.${sendingDomain.toLowerCase()}`;
}

/** The UTC day `YYYY-MM-DD` of a time (warm-up counters are per UTC day). */
export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** Seconds until the next UTC midnight after `now` (Retry-After when the warm-up cap is reached). */
export function secondsUntilNextUtcDay(now: Date): number {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.max(1, Math.ceil((next - now.getTime()) / 1000));
}
