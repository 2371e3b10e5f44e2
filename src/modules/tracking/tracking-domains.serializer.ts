import type { Domain } from '../../../db/entities/index.ts';

const iso = (value: Date | null | undefined) => (value ? value.toISOString() : null);

/** A domain's tracking host as the API shows it (Herald extension, snake_case like the request). */
export function serializeTrackingDomain(domain: Domain, cnameTarget: string) {
  return {
    domain_id: domain.id,
    domain: domain.domain,
    host: domain.trackingHost ?? null,
    cname_target: cnameTarget,
    status: !domain.trackingHost ? ('none' as const) : domain.trackingVerifiedAt ? ('verified' as const) : ('pending' as const),
    found: domain.trackingFound ?? null,
    verified_at: iso(domain.trackingVerifiedAt),
    last_checked_at: iso(domain.trackingCheckedAt),
  };
}
