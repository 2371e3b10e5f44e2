import * as v from 'valibot';
import { IdSchema, PageQuery, Timestamp } from '../../http/schemas.ts';
import { REPORT_LOCAL_PART } from './dmarc.fns.ts';

export const DmarcDomainParams = v.object({ id: IdSchema });

export const UpdateDmarcBody = v.strictObject({
  report_local_part: v.pipe(
    v.string(),
    v.trim(),
    v.toLowerCase(),
    v.regex(REPORT_LOCAL_PART, 'must be 1 to 64 characters: letters, digits, and . _ + - inside'),
  ),
});

export const ListDmarcSourcesQuery = v.object({
  ...PageQuery.entries,
  /** Reports whose period ended at or after this instant; default 30 days ago. */
  since: v.optional(v.pipe(v.string(), v.isoTimestamp('must be an ISO 8601 timestamp, e.g. 2026-11-01T00:00:00Z'))),
});

export const DmarcSettingsResponse = v.object({
  domain_id: v.string(),
  domain: v.string(),
  verified: v.boolean(),
  report_address: v.string(),
  report_local_part: v.string(),
  is_default_address: v.boolean(),
  rua: v.string(),
});

export const DmarcReportResponse = v.object({
  _id: v.string(),
  domain_id: v.string(),
  reporter: v.object({ org_name: v.string(), email: v.string() }),
  report_id: v.string(),
  policy_domain: v.string(),
  policy_published: v.object({
    adkim: v.nullable(v.string()),
    aspf: v.nullable(v.string()),
    p: v.nullable(v.string()),
    sp: v.nullable(v.string()),
    pct: v.nullable(v.number()),
  }),
  date_range: v.object({ begin: Timestamp, end: Timestamp }),
  record_count: v.number(),
  message_count: v.number(),
  received_at: Timestamp,
});

/** The messages a DMARC source or report counts by outcome: DMARC, aligned DKIM and SPF, and the receivers' dispositions. */
export const DMARC_DISPOSITION_COUNTS = {
  dmarc_pass: v.number(),
  dmarc_fail: v.number(),
  dkim_aligned_pass: v.number(),
  spf_aligned_pass: v.number(),
  quarantined: v.number(),
  rejected: v.number(),
};

export const DmarcSourceResponse = v.object({
  source_ip: v.string(),
  messages: v.number(),
  ...DMARC_DISPOSITION_COUNTS,
  reporting_orgs: v.array(v.string()),
  last_seen_at: Timestamp,
});
