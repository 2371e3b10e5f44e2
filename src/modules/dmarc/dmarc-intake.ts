import type { MikroORM } from '@mikro-orm/postgresql';
import { simpleParser } from 'mailparser';
import { DmarcAddress, Domain } from '../../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../../db/orm.ts';
import type { Logger } from '../../logger.ts';
import { parseAggregateReport, reportConcerns, type DmarcReportInput } from './dmarc-report.fns.ts';
import { DmarcReportError, unpackReport } from './dmarc-unpack.fns.ts';
import { storeReport } from './dmarc.repo.ts';
import { dmarcReportEventData } from './dmarc.serializer.ts';
import { recordEvent } from '../events/events.fns.ts';
import { DEFAULT_REPORT_LOCAL_PART } from './dmarc.fns.ts';

/** Attachments of one message read as reports at most (a reporter sends one per message). */
const MAX_REPORT_ATTACHMENTS = 10;

/** The raw message the intake reads: its id, envelope recipients, and a way to get its bytes. */
export interface ReportMessage {
  id: string;
  rcptTo: readonly string[];
  readRaw(): Promise<Buffer>;
}

interface ReportDomain {
  id: string;
  orgId: string;
  domain: string;
}

function split(address: string): { local: string; domain: string } {
  const at = address.lastIndexOf('@');
  return { local: address.slice(0, at).toLowerCase(), domain: address.slice(at + 1).toLowerCase() };
}

/**
 * Reads DMARC aggregate reports out of inbound mail (platform code: reads domains across
 * workspaces, then writes in the owning workspace only). A recipient is a domain's report
 * address when its domain is proven (not pending, as routing requires) and its local part is
 * the domain's (dmarc_addresses, else `dmarc`). Each XML, gzip or zip attachment is unpacked
 * (bounded, see dmarc-unpack.fns.ts), parsed and stored once per (domain, reporter, report id)
 * when it concerns the domain or a subdomain, with a `domain.dmarc_report_received` event in
 * the same transaction (a duplicate stores and emits nothing); what cannot be read is logged and
 * skipped.
 */
export function createDmarcIntake(deps: { orm: MikroORM; logger?: Logger | undefined }) {
  const { orm, logger } = deps;

  async function reportDomains(rcptTo: readonly string[]): Promise<{ matched: ReportDomain[]; owners: Map<string, Set<string>> }> {
    const recipients = rcptTo.map(split);
    const em = orm.em.fork();
    const domains = await em.find(
      Domain,
      { domain: { $in: [...new Set(recipients.map((r) => r.domain))] }, status: { $ne: 'pending' } },
      { ...ALL_TENANTS, fields: ['id', 'orgId', 'domain'] },
    );
    if (domains.length === 0) return { matched: [], owners: new Map() };
    const custom = await em.find(DmarcAddress, { domainId: { $in: domains.map((d) => d.id) } }, ALL_TENANTS);
    const localOf = new Map(custom.map((row) => [row.domainId, row.localPart]));
    const matched: ReportDomain[] = [];
    // Per workspace, the recipients of its domains that are not report addresses.
    const owners = new Map<string, Set<string>>();
    for (const domain of domains) {
      const local = localOf.get(domain.id) ?? DEFAULT_REPORT_LOCAL_PART;
      const others = owners.get(domain.orgId) ?? new Set<string>();
      owners.set(domain.orgId, others);
      for (const recipient of recipients.filter((r) => r.domain === domain.domain)) {
        if (recipient.local === local) matched.push({ id: domain.id, orgId: domain.orgId, domain: domain.domain });
        else others.add(`${recipient.local}@${recipient.domain}`);
      }
    }
    return { matched, owners };
  }

  async function readReports(message: ReportMessage): Promise<DmarcReportInput[]> {
    const parsed = await simpleParser(await message.readRaw(), { skipTextToHtml: true, skipImageLinks: true, skipTextLinks: true });
    const reports: DmarcReportInput[] = [];
    for (const attachment of parsed.attachments.slice(0, MAX_REPORT_ATTACHMENTS)) {
      try {
        reports.push(...unpackReport(attachment.content).map(parseAggregateReport));
      } catch (error) {
        if (!(error instanceof DmarcReportError)) throw error;
        logger?.info('dmarc: an attachment is not a readable aggregate report', {
          inboundId: message.id,
          filename: attachment.filename?.slice(0, 200),
          reason: error.reason,
          error: error.message.slice(0, 300),
        });
      }
    }
    return reports;
  }

  return {
    /**
     * Stores the reports a message carries for each report address among its recipients, and
     * answers the workspaces whose every recipient was a report address and that got at least
     * one report (stored now or before): the inbox records nothing for those.
     */
    async ingest(message: ReportMessage): Promise<Set<string>> {
      const { matched, owners } = await reportDomains(message.rcptTo);
      const consumed = new Set<string>();
      if (matched.length === 0) return consumed;
      const reports = await readReports(message);
      for (const domain of matched) {
        const concerning = reports.filter((report) => reportConcerns(domain.domain, report.policy.domain));
        if (concerning.length === 0) continue;
        await scopeToOrg(orm.em.fork(), domain.orgId).transactional(async (em) => {
          for (const report of concerning) {
            const stored = await storeReport(em, { orgId: domain.orgId, domainId: domain.id, inboundId: message.id, report });
            if (stored)
              recordEvent(em, domain.orgId, 'domain.dmarc_report_received', dmarcReportEventData(domain, stored, report, new Date()));
          }
        });
        if (owners.get(domain.orgId)?.size === 0) consumed.add(domain.orgId);
      }
      return consumed;
    },
  };
}

export type DmarcIntake = ReturnType<typeof createDmarcIntake>;
