/**
 * The send path's suppression check in one statement: addresses on the workspace's suppression
 * list or belonging to a contact that bounced, complained or was suppressed. Raw SQL is outside
 * the tenant filter, so both halves name the workspace.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

export async function findSuppressed(em: EntityManager, orgId: string, addresses: readonly string[]): Promise<Set<string>> {
  if (addresses.length === 0) return new Set();
  const rows = await em.getConnection().execute<{ email: string }[]>(
    `select email from suppressions where org_id = ? and email in (?)
     union
     select email from contacts where org_id = ? and email in (?) and status in ('bounced', 'complained', 'suppressed')`,
    [orgId, [...addresses], orgId, [...addresses]],
  );
  return new Set(rows.map((row) => row.email));
}
