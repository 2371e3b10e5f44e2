import type { EntityManager } from '@mikro-orm/postgresql';
import { Domain, TransactionalEmail } from '../../../db/entities/index.ts';
import { ALL_TENANTS } from '../../../db/orm.ts';

/** A workspace an inbound message reaches, and through which recipient. */
export interface InboundRoute {
  orgId: string;
  /** The transactional email a VERP bounce address names, when that is how it was reached. */
  emailId: string | null;
}

/** `bounce+<emailId>[+...]@<bounce domain>` → the email id, else null. */
export function verpEmailId(address: string, bounceDomain: string): string | null {
  const at = address.lastIndexOf('@');
  if (at < 0 || address.slice(at + 1).toLowerCase() !== bounceDomain.toLowerCase()) return null;
  const match = /^bounce\+([a-f0-9]{24})(?:\+.*)?$/i.exec(address.slice(0, at));
  return match ? match[1]!.toLowerCase() : null;
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
  const emailIds = new Set<string>();
  for (const address of rcptTo) {
    const emailId = verpEmailId(address, bounceDomain);
    if (emailId) emailIds.add(emailId);
    else domains.add(address.slice(address.lastIndexOf('@') + 1).toLowerCase());
  }
  const routes = new Map<string, InboundRoute>();
  if (emailIds.size > 0) {
    const emails = await em.find(TransactionalEmail, { id: { $in: [...emailIds] } }, { ...ALL_TENANTS, fields: ['id', 'orgId'] });
    for (const email of emails) if (!routes.has(email.orgId)) routes.set(email.orgId, { orgId: email.orgId, emailId: email.id });
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
