import { ApplicationFailure } from '@temporalio/common';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../src/config.ts';
import type { DnsResolver } from '../src/dns/resolver.ts';
import { createTrackingDomains } from '../src/modules/tracking/tracking-domains.service.ts';
import { createDomainVerification, type DomainCheckOutcome, type RecheckPage } from '../src/modules/domains/domain-verification.service.ts';

export interface DomainActivityDeps {
  orm: MikroORM;
  dns: DnsResolver;
  config: Pick<Config, 'spfInclude' | 'bounceDomain' | 'http'>;
}

/**
 * Domain verification activities. checkDomainDns is idempotent: a retry looks DNS up again
 * and writes an event only when a status (the domain's, its tracking host's) actually changes. A DNS outage is a result
 * (records unknown, status unchanged), not a failure.
 */
export function createDomainActivities({ orm, dns, config }: DomainActivityDeps) {
  const verification = createDomainVerification({ orm, dns, settings: config });
  const tracking = createTrackingDomains({ orm, dns, publicUrl: config.http.publicUrl });
  return {
    /**
     * Checks a domain's DNS records and records the outcome, then its custom tracking host's
     * CNAME if it has one (its own status and events); fails permanently when the domain is gone.
     */
    async checkDomainDns(input: { orgId: string; domainId: string }): Promise<DomainCheckOutcome> {
      const outcome = await verification.checkDomain(input.orgId, input.domainId);
      if (!outcome) {
        throw ApplicationFailure.nonRetryable(`domain ${input.domainId} does not exist in workspace ${input.orgId}`, 'DomainNotFound');
      }
      await tracking.check(input.orgId, input.domainId);
      return outcome;
    },

    /** One page of verified and attention domains (all workspaces), for the daily re-check. */
    async listDomainsForRecheck(input: { afterId: string | null; limit: number }): Promise<RecheckPage> {
      return verification.listDomainsForRecheck(input.afterId, input.limit);
    },
  };
}

export type DomainActivities = ReturnType<typeof createDomainActivities>;
