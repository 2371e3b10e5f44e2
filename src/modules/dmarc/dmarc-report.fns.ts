import { XMLParser, XMLValidator } from 'fast-xml-parser';
import ipaddr from 'ipaddr.js';
import { DmarcReportError } from './dmarc-unpack.fns.ts';

/** One `<auth_results>` entry: a DKIM signature or SPF check the receiver ran, unaligned or not. */
export interface DmarcAuthResult {
  domain: string;
  /** DKIM: the selector; SPF: the scope (`mfrom`, `helo`). */
  selector: string | null;
  result: string;
}

/** One `<record>`: messages from one source address with one evaluation (RFC 7489 appendix C). */
export interface DmarcRecordInput {
  sourceIp: string;
  count: number;
  disposition: string;
  /** policy_evaluated: DKIM passed and aligned with the From domain. */
  dkimAligned: boolean;
  /** policy_evaluated: SPF passed and aligned with the From domain. */
  spfAligned: boolean;
  headerFrom: string;
  envelopeFrom: string | null;
  dkim: DmarcAuthResult[];
  spf: DmarcAuthResult[];
}

/** The published policy the report was evaluated against. */
export interface DmarcPolicyPublished {
  domain: string;
  adkim: string | null;
  aspf: string | null;
  p: string | null;
  sp: string | null;
  pct: number | null;
}

export interface DmarcReportInput {
  orgName: string;
  email: string;
  reportId: string;
  dateBegin: Date;
  dateEnd: Date;
  policy: DmarcPolicyPublished;
  records: DmarcRecordInput[];
}

/** Report fields kept at most this long (an untrusted sender writes them). */
const MAX_TEXT = 255;

const parser = new XMLParser({
  removeNSPrefix: true,
  parseTagValue: false,
  ignoreAttributes: true,
  trimValues: true,
  isArray: (name) => name === 'record' || name === 'dkim' || name === 'spf',
});

type Node = Record<string, unknown>;

function malformed(message: string): DmarcReportError {
  return new DmarcReportError('malformed', message);
}

function nodeOf(value: unknown): Node {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Node) : {};
}

function textOf(value: unknown): string | null {
  if (typeof value === 'string' && value !== '') return value.slice(0, MAX_TEXT);
  if (typeof value === 'number') return String(value);
  return null;
}

function required(node: Node, field: string, where: string): string {
  const value = textOf(node[field]);
  if (value === null) throw malformed(`${where}.${field} is missing`);
  return value;
}

function integerOf(value: unknown, where: string): number {
  const text = textOf(value);
  if (text === null || !/^\d{1,15}$/.test(text)) throw malformed(`${where} is not a non-negative integer`);
  return Number(text);
}

/** `pass` in any case counts as a pass (some reporters write `Pass`). */
function passed(value: unknown): boolean {
  return textOf(value)?.toLowerCase() === 'pass';
}

function authResults(list: unknown, selectorField: 'selector' | 'scope'): DmarcAuthResult[] {
  return (Array.isArray(list) ? list : []).map((entry) => {
    const node = nodeOf(entry);
    return {
      domain: textOf(node.domain) ?? '',
      selector: textOf(node[selectorField]),
      result: textOf(node.result)?.toLowerCase() ?? 'none',
    };
  });
}

function recordOf(value: unknown, index: number): DmarcRecordInput {
  const node = nodeOf(value);
  const where = `record[${index}]`;
  const row = nodeOf(node.row);
  const sourceIp = required(row, 'source_ip', `${where}.row`);
  if (!ipaddr.isValid(sourceIp)) throw malformed(`${where}.row.source_ip is not an IP address`);
  const evaluated = nodeOf(row.policy_evaluated);
  const identifiers = nodeOf(node.identifiers);
  const auth = nodeOf(node.auth_results);
  return {
    sourceIp: ipaddr.process(sourceIp).toString(),
    count: integerOf(row.count, `${where}.row.count`),
    disposition: textOf(evaluated.disposition)?.toLowerCase() ?? 'none',
    dkimAligned: passed(Array.isArray(evaluated.dkim) ? evaluated.dkim[0] : evaluated.dkim),
    spfAligned: passed(Array.isArray(evaluated.spf) ? evaluated.spf[0] : evaluated.spf),
    headerFrom: textOf(identifiers.header_from)?.toLowerCase() ?? '',
    envelopeFrom: textOf(identifiers.envelope_from)?.toLowerCase() ?? null,
    dkim: authResults(auth.dkim, 'selector'),
    spf: authResults(auth.spf, 'scope'),
  };
}

/**
 * Parses one aggregate report (RFC 7489 appendix C; the namespaced RFC 9990 form reads the
 * same). Throws DmarcReportError `malformed` for XML that is not well formed, a DOCTYPE (no
 * report has one, and entity expansion is a known attack), or a report missing its metadata,
 * published domain or a record's address and count.
 */
export function parseAggregateReport(xml: string): DmarcReportInput {
  const text = xml.replace(/^\uFEFF/, '');
  if (/<!DOCTYPE/i.test(text)) throw malformed('a DOCTYPE is not allowed in a report');
  const valid = XMLValidator.validate(text);
  if (valid !== true) throw malformed(`not well-formed XML (line ${valid.err.line}: ${valid.err.msg})`);
  const feedback = nodeOf(nodeOf(parser.parse(text) as unknown).feedback);
  if (Object.keys(feedback).length === 0) throw malformed('no <feedback> element');
  const metadata = nodeOf(feedback.report_metadata);
  const range = nodeOf(metadata.date_range);
  const published = nodeOf(feedback.policy_published);
  const pct = textOf(published.pct);
  return {
    orgName: required(metadata, 'org_name', 'report_metadata'),
    email: textOf(metadata.email) ?? '',
    reportId: required(metadata, 'report_id', 'report_metadata'),
    dateBegin: new Date(integerOf(range.begin, 'report_metadata.date_range.begin') * 1000),
    dateEnd: new Date(integerOf(range.end, 'report_metadata.date_range.end') * 1000),
    policy: {
      domain: required(published, 'domain', 'policy_published').toLowerCase(),
      adkim: textOf(published.adkim),
      aspf: textOf(published.aspf),
      p: textOf(published.p),
      sp: textOf(published.sp),
      pct: pct !== null && /^\d{1,3}$/.test(pct) ? Number(pct) : null,
    },
    records: (Array.isArray(feedback.record) ? feedback.record : []).map(recordOf),
  };
}

/** DMARC passes when DKIM or SPF passed aligned (RFC 7489 §6.6.2). */
export function dmarcPassed(record: Pick<DmarcRecordInput, 'dkimAligned' | 'spfAligned'>): boolean {
  return record.dkimAligned || record.spfAligned;
}

/** A report's messages summed over its records: how many, how many passed DMARC, each mechanism aligned, the receiver's dispositions. */
export function reportTotals(report: Pick<DmarcReportInput, 'records'>) {
  const totals = { messages: 0, dmarcPass: 0, dmarcFail: 0, dkimAligned: 0, spfAligned: 0, quarantined: 0, rejected: 0 };
  for (const record of report.records) {
    totals.messages += record.count;
    if (dmarcPassed(record)) totals.dmarcPass += record.count;
    else totals.dmarcFail += record.count;
    if (record.dkimAligned) totals.dkimAligned += record.count;
    if (record.spfAligned) totals.spfAligned += record.count;
    if (record.disposition === 'quarantine') totals.quarantined += record.count;
    if (record.disposition === 'reject') totals.rejected += record.count;
  }
  return totals;
}

/** Whether a report about `reported` concerns `domain`: the domain itself or one of its subdomains. */
export function reportConcerns(domain: string, reported: string): boolean {
  const name = domain.toLowerCase();
  return reported === name || reported.endsWith(`.${name}`);
}
