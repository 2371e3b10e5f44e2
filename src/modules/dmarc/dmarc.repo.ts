import type { EntityManager } from '@mikro-orm/postgresql';
import { sql } from 'kysely';
import { newId } from '../../../db/ids.ts';
import { workspaceDb } from '../../../db/workspace-db.ts';
import { dmarcPassed, type DmarcReportInput } from './dmarc-report.fns.ts';

/**
 * The SQL of DMARC aggregate reports, every statement through `workspaceDb` (confined to one
 * workspace): the idempotent store of a report with its records, and the per-source sums.
 */

/** Records inserted per statement (each has 14 parameters; PostgreSQL allows 65,535). */
const RECORD_BATCH = 1_000;

/** Where and from what a report is stored. */
export interface StoreReportInput {
  orgId: string;
  domainId: string;
  inboundId: string | null;
  report: DmarcReportInput;
}

/**
 * Stores a report and its records in the caller's transaction, once per (domain, reporting
 * organisation, report id): answers the stored report's id, or null when the same report was
 * stored before (nothing stored again).
 */
export async function storeReport(em: EntityManager, input: StoreReportInput): Promise<string | null> {
  const { orgId, domainId, report } = input;
  const db = workspaceDb(em, orgId);
  const id = newId();
  const inserted = await db
    .insertInto('dmarc_reports')
    .values({
      id,
      org_id: orgId,
      domain_id: domainId,
      reporter_org: report.orgName,
      reporter_email: report.email,
      report_id: report.reportId,
      policy_domain: report.policy.domain,
      policy: { adkim: report.policy.adkim, aspf: report.policy.aspf, p: report.policy.p, sp: report.policy.sp, pct: report.policy.pct },
      date_begin: report.dateBegin.toISOString(),
      date_end: report.dateEnd.toISOString(),
      record_count: report.records.length,
      message_count: report.records.reduce((sum, record) => sum + record.count, 0),
      inbound_id: input.inboundId,
      created_at: new Date().toISOString(),
    })
    .onConflict((conflict) => conflict.constraint('dmarc_reports_report_unique').doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!inserted) return null;
  const rows = report.records.map((record) => ({
    id: newId(),
    org_id: orgId,
    report_id: id,
    domain_id: domainId,
    date_end: report.dateEnd.toISOString(),
    source_ip: record.sourceIp,
    count: record.count,
    disposition: record.disposition.slice(0, 32),
    dkim_aligned: record.dkimAligned,
    spf_aligned: record.spfAligned,
    dmarc_pass: dmarcPassed(record),
    header_from: record.headerFrom,
    envelope_from: record.envelopeFrom,
    auth_results: { dkim: record.dkim, spf: record.spf },
  }));
  for (let start = 0; start < rows.length; start += RECORD_BATCH) {
    await db
      .insertInto('dmarc_records')
      .values(rows.slice(start, start + RECORD_BATCH))
      .execute();
  }
  return id;
}

/** One sending address's messages over a window, as the reports counted them. */
export interface DmarcSource {
  sourceIp: string;
  messages: number;
  dmarcPass: number;
  dmarcFail: number;
  dkimAligned: number;
  spfAligned: number;
  /** Messages the receivers quarantined or rejected (disposition). */
  quarantined: number;
  rejected: number;
  reporters: string[];
  lastSeen: Date;
}

export interface SourcesQuery {
  domainId: string;
  since: Date;
  limit: number;
  /** Keyset: source addresses after this one (`address` order) or the page's order for `volume`. */
  afterIp?: string | undefined;
  /** `address`: by source address (the API's pages); `volume`: most messages first (the dashboard's top list). */
  order: 'address' | 'volume';
}

/** Per source address: messages and their results in reports whose period ended at or after `since`. */
export async function sumSources(em: EntityManager, orgId: string, query: SourcesQuery): Promise<DmarcSource[]> {
  const db = workspaceDb(em, orgId);
  const total = (condition?: 'dmarc_pass' | 'dkim_aligned' | 'spf_aligned') =>
    condition ? sql<string>`coalesce(sum(r.count) filter (where r.${sql.ref(condition)}), 0)` : sql<string>`sum(r.count)`;
  let select = db
    .selectFrom('dmarc_records as r')
    .innerJoin('dmarc_reports as rep', 'rep.id', 'r.report_id')
    .select([
      'r.source_ip',
      total().as('messages'),
      total('dmarc_pass').as('dmarc_pass'),
      total('dkim_aligned').as('dkim_aligned'),
      total('spf_aligned').as('spf_aligned'),
      sql<string>`coalesce(sum(r.count) filter (where r.disposition = 'quarantine'), 0)`.as('quarantined'),
      sql<string>`coalesce(sum(r.count) filter (where r.disposition = 'reject'), 0)`.as('rejected'),
      sql<string[]>`array_agg(distinct rep.reporter_org order by rep.reporter_org)`.as('reporters'),
      sql<string>`max(r.date_end)`.as('last_seen'),
    ])
    .where('r.domain_id', '=', query.domainId)
    .where('r.date_end', '>=', query.since.toISOString())
    .groupBy('r.source_ip');
  if (query.afterIp !== undefined) select = select.where('r.source_ip', '>', query.afterIp);
  select = query.order === 'volume' ? select.orderBy(sql`sum(r.count)`, 'desc').orderBy('r.source_ip') : select.orderBy('r.source_ip');
  const rows = await select.limit(query.limit).execute();
  return rows.map((row) => ({
    sourceIp: row.source_ip,
    messages: Number(row.messages),
    dmarcPass: Number(row.dmarc_pass),
    dmarcFail: Number(row.messages) - Number(row.dmarc_pass),
    dkimAligned: Number(row.dkim_aligned),
    spfAligned: Number(row.spf_aligned),
    quarantined: Number(row.quarantined),
    rejected: Number(row.rejected),
    reporters: row.reporters,
    lastSeen: new Date(row.last_seen),
  }));
}
