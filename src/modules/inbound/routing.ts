import type { EntityManager } from '@mikro-orm/postgresql';
import { Domain, TransactionalEmail } from '../../../db/entities/index.ts';
import { ALL_TENANTS } from '../../../db/orm.ts';

/** A workspace an inbound message reaches, and through which recipient. */
export interface InboundRoute {
  orgId: string;
  /** The transactional email a VERP bounce address names, when that is how it was reached. */
  emailId: string | null;
}

/**
 * `bounce+<emailId>[+...]@<host>` → the email id and the host, else null; the host is
 * BOUNCE_DOMAIN (messages sent before envelopes were aligned) or `bounces.<sending domain>`,
 * which the caller checks against the email it names (bounceHostMatches).
 */
export function verpEmailId(address: string, bounceDomain: string): { emailId: string; host: string } | null {
  const at = address.lastIndexOf('@');
  if (at < 0) return null;
  const host = address.slice(at + 1).toLowerCase();
  if (host !== bounceDomain.toLowerCase() && !host.startsWith('bounces.')) return null;
  const match = /^bounce\+([a-f0-9]{24})(?:\+.*)?$/i.exec(address.slice(0, at));
  return match ? { emailId: match[1]!.toLowerCase(), host } : null;
}

/** Whether a VERP host may name an email of `sendingDomain`: BOUNCE_DOMAIN, or that domain's own `bounces.` host. */
export function bounceHostMatches(host: string, bounceDomain: string, sendingDomain: string): boolean {
  return host === bounceDomain.toLowerCase() || host === `bounces.${sendingDomain.toLowerCase()}`;
}

/**
 * The workspaces an inbound message reaches (platform code: reads across workspaces): each
 * recipient's domain routes to the workspace owning it; a VERP bounce address routes to the
 * workspace of the email it names. When no recipient routes anywhere, `reportEmailId` (the
 * email a bounce or complaint report names, e.g. by quoting Herald's Message-ID) does. One
 * route per workspace.
 */
export async function routeRecipients(
  em: EntityManager,
  rcptTo: readonly string[],
  bounceDomain: string,
  reportEmailId: string | null = null,
): Promise<InboundRoute[]> {
  const domains = new Set<string>();
  const hostsById = new Map<string, string>();
  for (const address of rcptTo) {
    const verp = verpEmailId(address, bounceDomain);
    if (verp) hostsById.set(verp.emailId, verp.host);
    else domains.add(address.slice(address.lastIndexOf('@') + 1).toLowerCase());
  }
  const routes = new Map<string, InboundRoute>();
  if (hostsById.size > 0) {
    const emails = await em.find(TransactionalEmail, { id: { $in: [...hostsById.keys()] } }, { ...ALL_TENANTS, fields: ['id', 'orgId', 'domain'] });
    for (const email of emails) {
      // A bounce host of another sending domain cannot name this email.
      if (!bounceHostMatches(hostsById.get(email.id)!, bounceDomain, email.domain)) continue;
      if (!routes.has(email.orgId)) routes.set(email.orgId, { orgId: email.orgId, emailId: email.id });
    }
  }
  if (domains.size > 0) {
    const owned = await em.find(Domain, { domain: { $in: [...domains] } }, { ...ALL_TENANTS, fields: ['orgId'] });
    for (const domain of owned) if (!routes.has(domain.orgId)) routes.set(domain.orgId, { orgId: domain.orgId, emailId: null });
  }
  if (routes.size === 0 && reportEmailId && /^[a-f0-9]{24}$/.test(reportEmailId)) {
    const email = await em.findOne(TransactionalEmail, { id: reportEmailId }, { ...ALL_TENANTS, fields: ['id', 'orgId'] });
    if (email) routes.set(email.orgId, { orgId: email.orgId, emailId: email.id });
  }
  return [...routes.values()];
}
