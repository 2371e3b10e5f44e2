import type { DmarcReport } from '../../../db/entities/index.ts';
import { reportTotals, type DmarcReportInput } from './dmarc-report.fns.ts';
import { reportAddress, ruaTag } from './dmarc.fns.ts';
import type { DmarcSource } from './dmarc.repo.ts';
import type { DmarcSettings } from './dmarc.service.ts';

export function serializeDmarcSettings({ domain, localPart, isDefault }: DmarcSettings) {
  return {
    domain_id: domain.id,
    domain: domain.domain,
    verified: domain.status !== 'pending',
    report_address: reportAddress(domain.domain, localPart),
    report_local_part: localPart,
    is_default_address: isDefault,
    rua: ruaTag(domain.domain, localPart),
  };
}

const textOrNull = (value: unknown): string | null => (typeof value === 'string' ? value : null);

export function serializeDmarcReport(report: DmarcReport) {
  const policy = report.policy;
  return {
    _id: report.id,
    domain_id: report.domainId,
    reporter: { org_name: report.reporterOrg, email: report.reporterEmail },
    report_id: report.reportId,
    policy_domain: report.policyDomain,
    policy_published: {
      adkim: textOrNull(policy.adkim),
      aspf: textOrNull(policy.aspf),
      p: textOrNull(policy.p),
      sp: textOrNull(policy.sp),
      pct: typeof policy.pct === 'number' ? policy.pct : null,
    },
    date_range: { begin: report.dateBegin.toISOString(), end: report.dateEnd.toISOString() },
    record_count: report.recordCount,
    message_count: Number(report.messageCount),
    received_at: report.createdAt.toISOString(),
  };
}

export function serializeDmarcSource(source: DmarcSource) {
  return {
    source_ip: source.sourceIp,
    messages: source.messages,
    dmarc_pass: source.dmarcPass,
    dmarc_fail: source.dmarcFail,
    dkim_aligned_pass: source.dkimAligned,
    spf_aligned_pass: source.spfAligned,
    quarantined: source.quarantined,
    rejected: source.rejected,
    reporting_orgs: source.reporters,
    last_seen_at: source.lastSeen.toISOString(),
  };
}

/** The data of `domain.dmarc_report_received`: which domain, who reported which period, and the report's sums. */
export function dmarcReportEventData(domain: { id: string; domain: string }, storedId: string, report: DmarcReportInput, receivedAt: Date) {
  const totals = reportTotals(report);
  return {
    domain_id: domain.id,
    domain: domain.domain,
    dmarc_report_id: storedId,
    reporter: { org_name: report.orgName, email: report.email },
    report_id: report.reportId,
    policy_domain: report.policy.domain,
    date_range: { begin: report.dateBegin.toISOString(), end: report.dateEnd.toISOString() },
    record_count: report.records.length,
    message_count: totals.messages,
    dmarc_pass: totals.dmarcPass,
    dmarc_fail: totals.dmarcFail,
    dkim_aligned_pass: totals.dkimAligned,
    spf_aligned_pass: totals.spfAligned,
    quarantined: totals.quarantined,
    rejected: totals.rejected,
    received_at: receivedAt.toISOString(),
  };
}
