import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn, updatedAtColumn } from './columns.ts';

/**
 * One DMARC aggregate report (RFC 7489 appendix C) a reporter sent to a domain's report address.
 * Stored once per (domain, reporting organisation, report id): a reporter that sends the same
 * report again, or a retried ingestion, adds nothing.
 */
export const DmarcReportSchema = defineEntity({
  name: 'DmarcReport',
  tableName: 'dmarc_reports',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    domainId: p.string().length(24),
    reporterOrg: p.string().length(255),
    reporterEmail: p.string().length(255),
    reportId: p.string().length(255),
    /** The domain the report's policy_published names (the domain or a subdomain of it). */
    policyDomain: p.string().length(253),
    /** policy_published: adkim, aspf, p, sp, pct. */
    policy: p.json<Record<string, unknown>>().defaultRaw(`'{}'`),
    dateBegin: p.datetime(),
    dateEnd: p.datetime(),
    recordCount: p.integer(),
    messageCount: p.bigint('number'),
    /** The raw inbound message it arrived in. */
    inboundId: p.string().length(24).nullable(),
    createdAt: createdAtColumn(),
  },
  uniques: [{ name: 'dmarc_reports_report_unique', properties: ['domainId', 'reporterOrg', 'reportId'] }],
  indexes: [{ properties: ['orgId', 'domainId', 'createdAt', 'id'] }],
});

export class DmarcReport extends DmarcReportSchema.class {}
DmarcReportSchema.setClass(DmarcReport);

/** One record of a report: `count` messages from one source address with one evaluation. */
export const DmarcRecordSchema = defineEntity({
  name: 'DmarcRecord',
  tableName: 'dmarc_records',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    reportId: p.string().length(24).index(),
    domainId: p.string().length(24),
    /** The report's date_range end, copied so the per-source sums filter without a join. */
    dateEnd: p.datetime(),
    sourceIp: p.string().length(45),
    count: p.bigint('number'),
    disposition: p.string().length(32),
    dkimAligned: p.boolean(),
    spfAligned: p.boolean(),
    dmarcPass: p.boolean(),
    headerFrom: p.string().length(255),
    envelopeFrom: p.string().length(255).nullable(),
    /** auth_results: the DKIM and SPF checks as the receiver ran them. */
    authResults: p.json<Record<string, unknown>>().defaultRaw(`'{}'`),
  },
  indexes: [{ properties: ['orgId', 'domainId', 'sourceIp', 'dateEnd'] }],
});

export class DmarcRecord extends DmarcRecordSchema.class {}
DmarcRecordSchema.setClass(DmarcRecord);

/** A domain's report address when it is not the default `dmarc@<domain>`. */
export const DmarcAddressSchema = defineEntity({
  name: 'DmarcAddress',
  tableName: 'dmarc_addresses',
  properties: {
    domainId: p.string().length(24).primary(),
    orgId: orgIdColumn(),
    localPart: p.string().length(64),
    updatedAt: updatedAtColumn(),
  },
});

export class DmarcAddress extends DmarcAddressSchema.class {}
DmarcAddressSchema.setClass(DmarcAddress);
