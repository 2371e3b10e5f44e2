import type { Domain, SenderIdentity } from '../../../db/entities/index.ts';
import { deliverabilityRecords, type RecordSettings } from './deliverability.fns.ts';

/**
 * The spec's Domain option: the domain, what to publish in DNS and what the last check found
 * (`deliverability`), and its sender identities. A sender is verified when its domain is.
 */
export function serializeDomainOption(domain: Domain, senders: SenderIdentity[], settings: RecordSettings) {
  const verified = domain.status === 'verified';
  return {
    _id: domain.id,
    domain: domain.domain,
    verified,
    isDefault: domain.isDefault,
    domainSource: domain.source,
    ip_pool: domain.ipPool ?? null,
    deliverability: {
      status: domain.status,
      last_checked_at: domain.lastCheckedAt ? domain.lastCheckedAt.toISOString() : null,
      ...deliverabilityRecords(domain, settings),
    },
    sender_options: senders.map((sender) => ({
      id: sender.id,
      name: sender.name,
      email: sender.email,
      is_default: sender.isDefault,
      verified,
    })),
  };
}
