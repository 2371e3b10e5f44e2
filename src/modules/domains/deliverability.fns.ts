import type { DomainStatus } from '../../../db/entities/index.ts';
import type { DnsLookup } from '../../dns/resolver.ts';
import { dkimDnsValue, dkimPublicKeyData } from './dkim.fns.ts';

/**
 * The DNS records a sending domain publishes, how a lookup is judged against them, and how
 * the domain's status follows. Pure: lookups come in as DnsLookup answers.
 *
 * - spf (TXT on the domain): one `v=spf1` record that includes SPF_INCLUDE. Required.
 * - dkim (TXT at `<selector>._domainkey.<domain>`): a key record whose `p=` is the domain's
 *   generated public key. Required.
 * - return_path (CNAME `bounces.<domain>` → BOUNCE_DOMAIN): the VERP bounce host. Required.
 * - dmarc (TXT at `_dmarc.<domain>`): one record starting `v=DMARC1`. Recommended.
 */

export const DNS_RECORD_KEYS = ['spf', 'dkim', 'dmarc', 'return_path'] as const;
export type DnsRecordKey = (typeof DNS_RECORD_KEYS)[number];

export const RECORD_STATUSES = ['verified', 'missing', 'mismatch', 'unknown'] as const;
export type RecordStatus = (typeof RECORD_STATUSES)[number];

export const RECORD_TYPES = ['TXT', 'CNAME', 'MX'] as const;

/** What the user publishes. */
export interface ExpectedRecord {
  type: (typeof RECORD_TYPES)[number];
  name: string;
  value: string;
  required: boolean;
}

/** What a check found: `found` is what DNS returned for this record (several joined by a newline), or null. */
export interface RecordCheck {
  status: RecordStatus;
  found: string | null;
}

export type DeliverabilityRecord = ExpectedRecord & RecordCheck;
export type RecordChecks = Record<DnsRecordKey, RecordCheck>;

/** Operator settings the expected values come from. */
export interface RecordSettings {
  spfInclude: string;
  bounceDomain: string;
}

export interface DomainKeys {
  domain: string;
  dkimSelector: string;
  dkimPublicKey: string;
}

/** The answers a check needs: TXT on the three TXT names, CNAME on the return-path host. */
export type DnsAnswers = Record<DnsRecordKey, DnsLookup<string>>;

const normalizeHost = (host: string) => host.trim().toLowerCase().replace(/\.$/, '');

/** The records a domain must (or should) publish, with Herald's current settings. */
export function expectedRecords(domain: DomainKeys, settings: RecordSettings): Record<DnsRecordKey, ExpectedRecord> {
  return {
    spf: { type: 'TXT', name: domain.domain, value: `v=spf1 include:${normalizeHost(settings.spfInclude)} ~all`, required: true },
    dkim: {
      type: 'TXT',
      name: `${domain.dkimSelector}._domainkey.${domain.domain}`,
      value: dkimDnsValue(domain.dkimPublicKey),
      required: true,
    },
    dmarc: { type: 'TXT', name: `_dmarc.${domain.domain}`, value: 'v=DMARC1; p=none', required: false },
    return_path: { type: 'CNAME', name: `bounces.${domain.domain}`, value: normalizeHost(settings.bounceDomain), required: true },
  };
}

const joined = (records: string[]) => (records.length > 0 ? records.join('\n') : null);

/** Tags of a `k=v; k=v` record (DKIM, DMARC), names lower-cased, values trimmed. */
function tags(record: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of record.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) out.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  return out;
}

function checkSpf(records: string[], settings: RecordSettings): RecordCheck {
  const spf = records.filter((r) => /^v=spf1(\s|$)/i.test(r.trim()));
  if (spf.length === 0) return { status: 'missing', found: null };
  // RFC 7208 §4.5: more than one SPF record is a permanent error for receivers.
  if (spf.length > 1) return { status: 'mismatch', found: joined(spf) };
  const include = `include:${normalizeHost(settings.spfInclude)}`;
  const terms = spf[0]!
    .trim()
    .split(/\s+/)
    .map((t) => t.toLowerCase().replace(/^\+/, ''));
  return { status: terms.includes(include) ? 'verified' : 'mismatch', found: spf[0]! };
}

function checkDkim(records: string[], domain: DomainKeys): RecordCheck {
  const key = dkimPublicKeyData(domain.dkimPublicKey);
  const match = records.find((r) => (tags(r).get('p') ?? '').replace(/\s+/g, '') === key);
  return match ? { status: 'verified', found: match } : { status: 'mismatch', found: joined(records) };
}

function checkDmarc(records: string[]): RecordCheck {
  // RFC 7489 §6.3: `v=DMARC1` must come first, exactly; records without it are ignored.
  const dmarc = records.filter((r) => /^[vV]\s*=\s*DMARC1\s*(;|$)/.test(r.trim()));
  if (dmarc.length === 0) return { status: 'missing', found: null };
  // §6.6.3: several DMARC records mean none applies.
  return dmarc.length > 1 ? { status: 'mismatch', found: joined(dmarc) } : { status: 'verified', found: dmarc[0]! };
}

function checkReturnPath(targets: string[], expected: ExpectedRecord): RecordCheck {
  const found = targets.map(normalizeHost);
  return { status: found.includes(expected.value) ? 'verified' : 'mismatch', found: joined(found) };
}

/** Judges each record's DNS answer: verified, missing (no such record), mismatch (wrong content) or unknown (DNS did not answer). */
export function evaluateRecords(domain: DomainKeys, settings: RecordSettings, answers: DnsAnswers): RecordChecks {
  const expected = expectedRecords(domain, settings);
  const judge = (key: DnsRecordKey, check: (records: string[]) => RecordCheck): RecordCheck => {
    const answer = answers[key];
    if (answer.status === 'unreachable') return { status: 'unknown', found: null };
    if (answer.status === 'none') return { status: 'missing', found: null };
    return check(answer.records);
  };
  return {
    spf: judge('spf', (records) => checkSpf(records, settings)),
    dkim: judge('dkim', (records) => checkDkim(records, domain)),
    dmarc: judge('dmarc', checkDmarc),
    return_path: judge('return_path', (targets) => checkReturnPath(targets, expected.return_path)),
  };
}

const REQUIRED_KEYS = DNS_RECORD_KEYS.filter((key) => key !== 'dmarc');

/**
 * The status after a check. All required records verified → verified. A required record
 * definitely missing or wrong → attention for a domain that was verified (or stays in
 * attention), pending stays pending. Otherwise (only unknowns: DNS did not answer) nothing
 * changes.
 */
export function nextDomainStatus(current: DomainStatus, checks: RecordChecks): DomainStatus {
  const statuses = REQUIRED_KEYS.map((key) => checks[key].status);
  if (statuses.every((s) => s === 'verified')) return 'verified';
  const failed = statuses.some((s) => s === 'missing' || s === 'mismatch');
  if (!failed) return current;
  return current === 'pending' ? 'pending' : 'attention';
}

const NOT_CHECKED: RecordCheck = { status: 'unknown', found: null };

/** Reads one record's stored check defensively (the jsonb column may be `{}` or older). */
function storedCheck(stored: Record<string, unknown>, key: DnsRecordKey): RecordCheck {
  const value = stored[key] as { status?: unknown; found?: unknown } | undefined;
  if (!value || typeof value !== 'object') return NOT_CHECKED;
  const status = RECORD_STATUSES.find((s) => s === value.status);
  if (!status) return NOT_CHECKED;
  return { status, found: typeof value.found === 'string' ? value.found : null };
}

/** Each expected record with the last check's result (unknown before any check). */
export function deliverabilityRecords(
  domain: DomainKeys & { dnsCheck: Record<string, unknown> },
  settings: RecordSettings,
): Record<DnsRecordKey, DeliverabilityRecord> {
  const expected = expectedRecords(domain, settings);
  return Object.fromEntries(DNS_RECORD_KEYS.map((key) => [key, { ...expected[key], ...storedCheck(domain.dnsCheck, key) }])) as Record<
    DnsRecordKey,
    DeliverabilityRecord
  >;
}
