import { LockMode } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Domain, SenderIdentity } from '../../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../../db/orm.ts';
import type { DnsResolver } from '../../dns/resolver.ts';
import { recordEvent } from '../events/events.fns.ts';
import { deliverabilityRecords, evaluateRecords, expectedRecords, nextDomainStatus, type RecordSettings } from './deliverability.fns.ts';
import { serializeDomainOption } from './domains.serializer.ts';
import type { DomainCheckOutcome, RecheckPage } from '../../../workflows/domains.ts';

export type { DomainCheckOutcome, RecheckPage } from '../../../workflows/domains.ts';

export interface DomainVerificationDeps {
  orm: MikroORM;
  dns: Pick<DnsResolver, 'txt' | 'cname'>;
  settings: RecordSettings;
}

/**
 * Domain verification: looks the domain's records up in DNS, stores what was found
 * (`dnsCheck`, `lastCheckedAt`) and moves its status (see nextDomainStatus). A status change
 * writes domain.verified or domain.attention in the same transaction. A name another
 * workspace holds proven stays pending here whatever DNS says (one workspace receives a
 * domain's mail; an operator moves it). Safe to repeat: a second run with the same DNS
 * changes nothing and writes no event.
 */
export function createDomainVerification(deps: DomainVerificationDeps) {
  const { orm, dns, settings } = deps;
  return {
    /** Checks one domain of a workspace; null when it does not exist there. */
    async checkDomain(orgId: string, domainId: string): Promise<DomainCheckOutcome | null> {
      const domain = await scopeToOrg(orm.em, orgId).findOne(Domain, { id: domainId });
      if (!domain) return null;
      const expected = expectedRecords(domain, settings);
      const [spf, dkim, dmarc, returnPath] = await Promise.all([
        dns.txt(expected.spf.name),
        dns.txt(expected.dkim.name),
        dns.txt(expected.dmarc.name),
        dns.cname(expected.return_path.name),
      ]);
      const checks = evaluateRecords(domain, settings, { spf, dkim, dmarc, return_path: returnPath });
      const checkedAt = new Date();

      return scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const row = await em.findOne(Domain, { id: domainId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        if (!row) return null;
        const previousStatus = row.status;
        let status = nextDomainStatus(previousStatus, checks);
        // Another workspace holds the name proven: this one stays pending until it lets go (an operator decides).
        if (
          previousStatus === 'pending' &&
          status !== 'pending' &&
          (await em.count(Domain, { domain: row.domain, status: { $ne: 'pending' }, id: { $ne: row.id } }, ALL_TENANTS)) > 0
        ) {
          status = 'pending';
        }
        row.dnsCheck = checks;
        row.lastCheckedAt = checkedAt;
        row.status = status;
        if (status === 'verified' && previousStatus !== 'verified') row.verifiedAt = checkedAt;
        if (status !== previousStatus) {
          const senders = await em.find(SenderIdentity, { domainId }, { orderBy: { isDefault: 'desc', email: 'asc' } });
          recordEvent(em, orgId, status === 'verified' ? 'domain.verified' : 'domain.attention', {
            domain: serializeDomainOption(row, senders, settings),
            previous_status: previousStatus,
          });
        }
        return {
          orgId,
          domainId,
          domain: row.domain,
          previousStatus,
          status,
          checkedAt: checkedAt.toISOString(),
          records: deliverabilityRecords(row, settings),
        };
      });
    },

    /** Verified and attention domains of every workspace, by id, one page at a time. */
    async listDomainsForRecheck(afterId: string | null, limit: number): Promise<RecheckPage> {
      const rows = await orm.em
        .fork()
        .find(
          Domain,
          { status: { $in: ['verified', 'attention'] }, ...(afterId ? { id: { $gt: afterId } } : {}) },
          { ...ALL_TENANTS, orderBy: { id: 'asc' }, limit: limit + 1, fields: ['id', 'orgId'] },
        );
      const page = rows.slice(0, limit);
      return {
        domains: page.map((row) => ({ orgId: row.orgId, domainId: row.id })),
        nextAfterId: rows.length > limit ? page.at(-1)!.id : null,
      };
    },
  };
}

export type DomainVerification = ReturnType<typeof createDomainVerification>;
