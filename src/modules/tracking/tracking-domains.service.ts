import { LockMode } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Domain } from '../../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../../db/orm.ts';
import type { DnsResolver } from '../../dns/resolver.ts';
import { AppError } from '../../errors.ts';
import { recordEvent } from '../events/events.fns.ts';
import { serializeTrackingDomain } from './tracking-domains.serializer.ts';
import { cnameMatches, isOwnHost, normalizeHost, trackingHostProblem } from './tracking.fns.ts';

/** How long the api trusts what it read about a Host header (verified or not): a new host works within this. */
const HOST_CACHE_MS = 10_000;
const HOST_CACHE_MAX = 10_000;

function invalidHost(message: string): AppError {
  return new AppError('invalid_request', `Invalid body.host: ${message}.`, {
    reason: 'INVALID_TRACKING_HOST',
    fields: [{ path: 'host', location: 'body', type: 'tracking_host', message }],
  });
}

/**
 * Custom tracking hosts: a domain's `track.<domain>` (any subdomain of it), a CNAME to the host
 * of PUBLIC_URL. Setting one checks its CNAME at once; `check` checks again (the API, and the
 * daily domain re-check for every domain that has one). While the CNAME is found right the
 * host is verified and its domain's mail uses it; otherwise PUBLIC_URL.
 * One workspace holds a verified host (a unique index), as with domains.
 */
export function createTrackingDomains(deps: { orm: MikroORM; dns: Pick<DnsResolver, 'cname'>; publicUrl: string }) {
  const target = new URL(deps.publicUrl).hostname;
  const seen = new Map<string, { verified: boolean; until: number }>();

  /**
   * Looks the domain's tracking host up and records what DNS said, in one transaction with the
   * row locked; a change of verification writes `domain.tracking_verified` or
   * `domain.tracking_attention` (once: a second check with the same DNS changes nothing).
   */
  async function verify(orgId: string, domainId: string): Promise<Domain> {
    const domain = await scopeToOrg(deps.orm.em.fork(), orgId).findOne(Domain, { id: domainId });
    if (!domain) throw new AppError('not_found', `domain ${domainId} does not exist`);
    if (!domain.trackingHost) return domain;
    const host = domain.trackingHost;
    const answer = await deps.dns.cname(host);
    const found = answer.status === 'found' ? normalizeHost(answer.records[0] ?? '') : null;
    const verified = cnameMatches(found, target);
    return scopeToOrg(deps.orm.em.fork(), orgId).transactional(async (em) => {
      const row = await em.findOne(Domain, { id: domainId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (!row) throw new AppError('not_found', `domain ${domainId} does not exist`);
      // The host changed while DNS was asked: that change checked it already.
      if (row.trackingHost !== host) return row;
      const taken =
        verified &&
        (await em.count(Domain, { trackingHost: host, trackingVerifiedAt: { $ne: null }, id: { $ne: row.id } }, ALL_TENANTS)) > 0;
      const previous = serializeTrackingDomain(row, target).status;
      row.trackingCheckedAt = new Date();
      row.trackingFound = found;
      // DNS not answering keeps what was known; a definite answer decides.
      if (answer.status !== 'unreachable') row.trackingVerifiedAt = verified && !taken ? (row.trackingVerifiedAt ?? new Date()) : null;
      const tracking = serializeTrackingDomain(row, target);
      if (tracking.status !== previous) {
        const type = tracking.status === 'verified' ? 'domain.tracking_verified' : 'domain.tracking_attention';
        recordEvent(em, orgId, type, { tracking, previous_status: previous });
      }
      return row;
    });
  }

  return {
    /** The CNAME target a tracking host must point at. */
    cnameTarget: target,

    /** Sets (or with null removes) domain `domainId`'s tracking host and checks it at once. */
    async setHost(orgId: string, domainId: string, host: string | null): Promise<Domain> {
      const em = scopeToOrg(deps.orm.em.fork(), orgId);
      const domain = await em.findOne(Domain, { id: domainId });
      if (!domain) throw new AppError('not_found', `domain ${domainId} does not exist`);
      const name = host === null ? null : normalizeHost(host);
      if (name !== null) {
        const problem = trackingHostProblem(name, domain.domain);
        if (problem) throw invalidHost(problem);
      }
      if (name !== domain.trackingHost) {
        Object.assign(domain, { trackingHost: name, trackingVerifiedAt: null, trackingCheckedAt: null, trackingFound: null });
        await em.flush();
      }
      return verify(orgId, domainId);
    },

    /** Checks the domain's tracking host's CNAME again. */
    check: verify,

    /** Whether requests for tracking paths are served on `hostname`: Herald's own host or a verified tracking host. */
    async isTrackingHost(hostname: string): Promise<boolean> {
      if (isOwnHost(hostname, deps.publicUrl)) return true;
      const name = normalizeHost(hostname);
      const cached = seen.get(name);
      if (cached && cached.until > Date.now()) return cached.verified;
      const count = await deps.orm.em.fork().count(Domain, { trackingHost: name, trackingVerifiedAt: { $ne: null } }, ALL_TENANTS);
      if (seen.size >= HOST_CACHE_MAX) seen.clear();
      seen.set(name, { verified: count > 0, until: Date.now() + HOST_CACHE_MS });
      return count > 0;
    },
  };
}

export type TrackingDomains = ReturnType<typeof createTrackingDomains>;
