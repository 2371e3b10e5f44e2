/**
 * The lookups that route a raw inbound message to workspaces (platform code: they read across
 * workspaces, before any workspace is known, so no statement here takes the workspace
 * condition). Plain SQL: they run for every inbound message.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { arrayLiteral } from '../../../db/prepared.ts';
import { addressDomainSql } from '../../../db/sql-fragment.ts';
import { DEFAULT_REPORT_LOCAL_PART } from '../dmarc/dmarc.fns.ts';

/** A proven (not pending) domain that receives mail, and the local part of its DMARC report address. */
export interface ReceivingDomain {
  orgId: string;
  domain: string;
  reportLocalPart: string;
}

/** A receiving domain's row as the statements below return it. */
export interface ReceivingDomainRow {
  org_id: string;
  domain: string;
  report_local_part: string;
}

export function receivingDomainOf(row: ReceivingDomainRow): ReceivingDomain {
  return { orgId: row.org_id, domain: row.domain, reportLocalPart: row.report_local_part };
}

/**
 * The proven domains among the domains of a raw row `m`'s recipients (lower-cased text after the
 * last `@`, as routing.ts routeOf), as a JSON array of ReceivingDomainRow: a superset of what
 * findReceivingDomains answers for the domains routing asks about. One named parameter,
 * `:rdReportLocalPart`: the default report local part.
 */
export const RECEIVING_DOMAINS_OF_RCPT_SQL = `(select coalesce(json_agg(json_build_object('org_id', d.org_id, 'domain', d.domain, 'report_local_part', coalesce(a.local_part, :rdReportLocalPart))), '[]'::json)
     from domains d /* all workspaces: inbound routing, before any workspace is known */ left join dmarc_addresses a on a.domain_id = d.id
    where d.domain = any(array(select ${addressDomainSql('r')} from unnest(m.rcpt_to) r)) and d.status <> 'pending')`;

/** The proven domains among `domains` (lower-cased names), each with its report address's local part. */
export async function findReceivingDomains(em: EntityManager, domains: readonly string[]): Promise<ReceivingDomain[]> {
  const rows = await em.execute<ReceivingDomainRow[]>(
    `select d.org_id, d.domain, coalesce(a.local_part, ?) as report_local_part
       from domains d left join dmarc_addresses a on a.domain_id = d.id
      where d.domain = any(?::text[]) and d.status <> 'pending'`,
    [DEFAULT_REPORT_LOCAL_PART, arrayLiteral(domains)],
  );
  return rows.map(receivingDomainOf);
}

/** The transactional emails `ids` name: their workspace and sending domain. */
export async function findVerpEmails(em: EntityManager, ids: readonly string[]): Promise<{ id: string; orgId: string; domain: string }[]> {
  const rows = await em.execute<{ id: string; org_id: string; domain: string }[]>(
    `select id, org_id, domain from transactional_emails where id = any(?::text[])`,
    [arrayLiteral(ids)],
  );
  return rows.map((row) => ({ id: row.id, orgId: row.org_id, domain: row.domain }));
}

/** Whether some workspace has proven `domain` (a lower-cased name): the SMTP listener's RCPT check. */
export async function isReceivingDomain(em: EntityManager, domain: string): Promise<boolean> {
  const [row] = await em.execute<{ found: boolean }[]>(
    `select exists (select 1 from domains /* all workspaces: the RCPT check, before any workspace is known */ where domain = ? and status <> 'pending') as found`,
    [domain],
  );
  return row?.found ?? false;
}
