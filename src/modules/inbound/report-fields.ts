/**
 * Pure helpers for the machine-readable parts of delivery reports: RFC 822-style field
 * blocks (RFC 3464 delivery-status, RFC 5965 feedback-report, RFC 6533 global variants),
 * enhanced status codes and the hard/soft decision. No I/O.
 */
import { nestedRemoteStatus, remoteStatus, statusFromWording } from './report-status-text.ts';

export type BounceType = 'hard' | 'soft';
export type ReportAction = 'failed' | 'delayed' | 'delivered' | 'relayed' | 'expanded';

/** One header-like field: lower-cased name and unfolded value. */
export interface Field {
  name: string;
  value: string;
}

/** Unfolds and splits text into blocks of fields; blocks are separated by blank lines. */
export function parseFieldBlocks(text: string): Field[][] {
  const blocks: Field[][] = [];
  let current: Field[] = [];
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line.trim() === '') {
      if (current.length > 0) blocks.push(current);
      current = [];
      continue;
    }
    const last = current.at(-1);
    if (/^[ \t]/.test(line) && last) {
      last.value = `${last.value} ${line.trim()}`;
      continue;
    }
    const match = /^([A-Za-z][A-Za-z0-9-]*)[ \t]*:[ \t]*(.*)$/.exec(line);
    if (match) current.push({ name: match[1]!.toLowerCase(), value: match[2]!.trim() });
  }
  if (current.length > 0) blocks.push(current);
  return blocks;
}

/** The first value of a field in a block, or null. */
export function fieldValue(block: Field[], name: string): string | null {
  return block.find((f) => f.name === name)?.value ?? null;
}

/** Every value of a field in a block. */
export function fieldValues(block: Field[], name: string): string[] {
  return block.filter((f) => f.name === name).map((f) => f.value);
}

/** Removes an RFC 3464 type prefix (`rfc822;`, `smtp;`, `dns;`, `utf-8;`) from a value. */
export function stripTypePrefix(value: string): string {
  return value.replace(/^\s*[A-Za-z0-9-]+\s*;\s*/, '').trim();
}

const ADDRESS = /[^\s<>"'(),;:[\]]+@[^\s<>"'(),;:[\]]+\.[^\s<>"'(),;:[\]]+|[^\s<>"'(),;:[\]]+@[A-Za-z0-9-]+/;

/** Decodes RFC 3461 xtext (`+HH`), used by some MTAs in recipient fields. */
function decodeXtext(value: string): string {
  return value.replace(/\+([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/** The lower-cased address in a recipient field value (`rfc822; <a@b>`), or null. */
export function addressFromField(value: string | null): string | null {
  if (!value) return null;
  const stripped = stripTypePrefix(value);
  const angle = /<([^<>\s]+@[^<>\s]+)>/.exec(stripped);
  const candidate = angle ? angle[1]! : ADDRESS.exec(decodeXtext(stripped))?.[0];
  return candidate ? normaliseAddress(candidate) : null;
}

/** Lower-cases an address and drops surrounding punctuation MTAs add. */
export function normaliseAddress(address: string): string {
  return address
    .trim()
    .replace(/^[<("'[]+|[>)"'\].,:;]+$/g, '')
    .toLowerCase();
}

const ENHANCED = /(?<![\w.])([245])\.(\d{1,3})\.(\d{1,3})(?!\d|\.\d)/;
const REPLY = /(?<![\w.:/-])([245][0-5]\d)(?=[\s-]|$)/;

/** The enhanced status code (`5.1.1`) in a text, or null. */
export function enhancedStatus(text: string | null): string | null {
  if (!text) return null;
  const m = ENHANCED.exec(text);
  return m ? `${m[1]}.${Number(m[2])}.${Number(m[3])}` : null;
}

/** The SMTP reply code (`550`) in a text, or null. */
export function replyCode(text: string | null): string | null {
  if (!text) return null;
  return REPLY.exec(text)?.[1] ?? null;
}

/**
 * The status of a recipient: the enhanced code of the Status field, unless the diagnostic
 * quotes the remote server's more specific answer of the same class (when the field only says
 * `X.0.0`, or the remote reply is nested in `<...>` after the relay's own words); without a
 * Status field, the code the diagnostic's wording implies (report-status-text.ts).
 */
export function resolveStatus(
  statusField: string | null,
  diagnostic: string | null,
  action: 'failed' | 'delayed' | null = 'failed',
): string | null {
  const own = enhancedStatus(statusField);
  const fromDiagnostic = remoteStatus(diagnostic);
  const nested = nestedRemoteStatus(diagnostic);
  if (own && nested && nested[0] === own[0]) return nested;
  if (own && own.endsWith('.0.0') && fromDiagnostic && fromDiagnostic[0] === own[0]) return fromDiagnostic;
  if (own) return own;
  return fromDiagnostic ?? statusFromWording(diagnostic, action);
}

/**
 * Status codes in class 5 that are not about the address itself: mailbox full (5.2.2),
 * message over the mailbox's limit (5.2.3), message too big for the system (5.3.4) and
 * delivery time expired (5.4.7). Herald treats these as soft: suppressing the address
 * for them would be wrong.
 */
const SOFT_PERMANENT = new Set(['5.2.2', '5.2.3', '5.3.4', '5.4.7']);

/** Diagnostics that say the mailbox is full or over quota, whatever code the MTA used. */
const QUOTA =
  /mailbox (is )?full|over ?quota|quota exceeded|exceeded (the )?(storage|quota)|insufficient (disk )?space|mailbox size limit|not enough (disk )?space|mailfolder is full|user is over|out of storage/i;
const PERMANENT_WORDS =
  /permanent|fatal|does not exist|doesn't exist|no such (user|mailbox|address)|user unknown|unknown user|address rejected|invalid (recipient|address|mailbox)|no mailbox|not a valid|mailbox unavailable|unrouteable|unroutable|recipient not found|not found|not listed|account (is )?(disabled|closed|has been disabled)|host not found|domain not found|bad destination/i;
const TRANSIENT_WORDS = /temporar|transient|try again|will retry|deferred|delayed|timed? ?out/i;

/**
 * hard or soft for a recipient: hard for class 5 except the codes above and mailbox-full
 * diagnostics, soft for class 4. Without a code, the wording decides (permanent → hard,
 * temporary → soft); failures with no evidence at all are soft, so nothing is suppressed
 * on a guess. Delayed recipients are soft; other actions carry no bounce type.
 */
export function bounceTypeOf(action: ReportAction | null, status: string | null, diagnostic: string | null): BounceType | null {
  if (action === 'delayed') return 'soft';
  if (action !== 'failed') return null;
  if (diagnostic && QUOTA.test(diagnostic)) return 'soft';
  if (status?.startsWith('5')) return SOFT_PERMANENT.has(status) ? 'soft' : 'hard';
  if (status?.startsWith('4')) return 'soft';
  if (diagnostic && TRANSIENT_WORDS.test(diagnostic) && !/permanent|fatal/i.test(diagnostic)) return 'soft';
  if (diagnostic && PERMANENT_WORDS.test(diagnostic)) return 'hard';
  return 'soft';
}

/** The RFC 3464 Action of a field value, inferred from the status class when absent. */
export function parseAction(value: string | null, status: string | null): ReportAction | null {
  const action = value
    ?.trim()
    .toLowerCase()
    .split(/[\s(;]/)[0];
  if (action === 'failed' || action === 'delayed' || action === 'delivered' || action === 'relayed' || action === 'expanded') {
    return action;
  }
  if (status?.startsWith('5')) return 'failed';
  if (status?.startsWith('4')) return 'delayed';
  if (status?.startsWith('2')) return 'delivered';
  return null;
}

/** Collapses whitespace in a diagnostic and drops its type prefix; null when empty. */
export function cleanDiagnostic(value: string | null): string | null {
  if (!value) return null;
  const text = stripTypePrefix(value).replace(/\s+/g, ' ').trim();
  return text === '' ? null : text.slice(0, 1000);
}
