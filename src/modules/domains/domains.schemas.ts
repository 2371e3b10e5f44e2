import * as v from 'valibot';
import { DOMAIN_STATUSES } from '../../../db/entities/index.ts';
import { Timestamp } from '../../http/schemas.ts';
import { RECORD_STATUSES, RECORD_TYPES } from './deliverability.fns.ts';

const DnsRecord = v.object({
  type: v.picklist(RECORD_TYPES),
  name: v.string(),
  value: v.string(),
  required: v.boolean(),
  status: v.picklist(RECORD_STATUSES),
  found: v.nullable(v.string()),
});

/** The spec's Domain option; its mixed casing (camelCase, snake_case sender options) is the spec's. */
export const DomainOptionResponse = v.object({
  _id: v.string(),
  domain: v.string(),
  verified: v.boolean(),
  isDefault: v.boolean(),
  domainSource: v.string(),
  /** Herald extension: the egress IP pool the domain's mail leaves from (null: the default). */
  ip_pool: v.nullable(v.string()),
  deliverability: v.object({
    status: v.picklist(DOMAIN_STATUSES),
    last_checked_at: v.nullable(Timestamp),
    spf: DnsRecord,
    dkim: DnsRecord,
    dmarc: DnsRecord,
    return_path: DnsRecord,
  }),
  sender_options: v.array(
    v.object({
      id: v.string(),
      name: v.string(),
      email: v.pipe(v.string(), v.email()),
      is_default: v.boolean(),
      verified: v.boolean(),
    }),
  ),
});
