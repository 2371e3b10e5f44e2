import type { EntityManager } from '@mikro-orm/postgresql';
import { bounceHostOf } from '../sends/sends.fns.ts';
import { isBounceHost, type VerpSigner } from '../outbound/verp.ts';
import { findReceivingDomains, findVerpEmails, type ReceivingDomain } from './routing.repo.ts';

/** A workspace an inbound message reaches, and through which recipient. */
export interface InboundRoute {
  orgId: string;
  /**
   * The transactional email a signed VERP return path names (the tag verified, the host that
   * email's own bounce host), when that is how the message reached the workspace. Only such a
   * route lets a delivery report change that email's state.
   */
  emailId: string | null;
}

/**
 * Where a recipient address routes. `verp`: a bounce address whose tag verifies (the email is
 * still to be found); `domain`: an ordinary address, routed by its domain; `refused`: a bounce
 * address on a bounce host that Herald did not sign (forged, guessed or of the unsigned legacy
 * form), which nothing may act on.
 */
export type RecipientRoute = { kind: 'verp'; emailId: string; host: string } | { kind: 'domain'; domain: string } | { kind: 'refused' };

export function routeOf(address: string, bounceDomain: string, verp: VerpSigner | null): RecipientRoute {
  const checked = verp?.check(address, bounceDomain) ?? { kind: 'other' as const };
  if (checked.kind === 'verified') return { kind: 'verp', emailId: checked.verp.emailId, host: checked.verp.host };
  if (checked.kind === 'forged') return { kind: 'refused' };
  const domain = address.slice(address.lastIndexOf('@') + 1).toLowerCase();
  if (isBounceHost(domain, bounceDomain)) return { kind: 'refused' };
  return { kind: 'domain', domain };
}

/** PostgreSQL's lower() and JavaScript's toLowerCase() agree on ASCII; other names are looked up as routeOf lower-cases them. */
function isAscii(name: string): boolean {
  return !/[^\p{ASCII}]/u.test(name);
}

/** The workspaces a message reaches, and whether a recipient is a domain's DMARC report address. */
export interface Routing {
  routes: InboundRoute[];
  /**
   * A recipient's local part is its (proven) domain's report address: only then can the message
   * carry DMARC reports for src/modules/dmarc/dmarc-intake.ts (which checks the same again).
   */
  toReportAddress: boolean;
}

/**
 * The workspaces an inbound message reaches (platform code: reads across workspaces): each
 * ordinary recipient's domain routes to the workspace that has verified it (a pending domain
 * receives nothing); a signed VERP return path routes to the workspace of the email it names,
 * when the address's host is that email's own bounce host. Nothing else routes: a report that
 * quotes a Herald Message-ID proves nothing (ids are not secrets). One route per workspace; a
 * VERP route wins over a domain route of the same workspace.
 */
export async function routeRecipients(
  em: EntityManager,
  rcptTo: readonly string[],
  bounceDomain: string,
  verp: VerpSigner | null,
  /** The proven domains among the recipients' as read with the raw row (a superset of what is asked); absent: read here. */
  known?: readonly ReceivingDomain[],
): Promise<Routing> {
  const domains = new Set<string>();
  const hostsById = new Map<string, string>();
  for (const address of rcptTo) {
    const route = routeOf(address, bounceDomain, verp);
    if (route.kind === 'verp') hostsById.set(route.emailId, route.host);
    else if (route.kind === 'domain') domains.add(route.domain);
  }
  const routes = new Map<string, InboundRoute>();
  if (hostsById.size > 0) {
    for (const email of await findVerpEmails(em, [...hostsById.keys()])) {
      if (hostsById.get(email.id) !== bounceHostOf(email.domain)) continue;
      if (!routes.has(email.orgId)) routes.set(email.orgId, { orgId: email.orgId, emailId: email.id });
    }
  }
  let toReportAddress = false;
  if (domains.size > 0) {
    const owned =
      known && [...domains].every(isAscii) ? known.filter((d) => domains.has(d.domain)) : await findReceivingDomains(em, [...domains]);
    for (const domain of owned) if (!routes.has(domain.orgId)) routes.set(domain.orgId, { orgId: domain.orgId, emailId: null });
    const reportAddresses = new Set(owned.map((domain) => `${domain.reportLocalPart}@${domain.domain}`));
    toReportAddress = rcptTo.some((address) => reportAddresses.has(address.toLowerCase()));
  }
  return { routes: [...routes.values()], toReportAddress };
}
