import type { EntityManager } from '@mikro-orm/postgresql';
import { arrayLiteral, queryPrepared } from '../../../db/prepared.ts';

/**
 * Reads the event types each of `orgIds` has an enabled webhook endpoint for, in the caller's
 * transaction if any (`*` stands for every type); outside one, as a prepared statement
 * (queryPrepared). A hot path that writes many events (the group commit of accepted sends)
 * leaves out the types nobody subscribes to: an endpoint receives only events written after it
 * existed, so such an event would never be delivered to anyone.
 */
export async function findSubscribedEventTypes(em: EntityManager, orgIds: readonly string[]): Promise<Map<string, Set<string>>> {
  const subscribed = new Map<string, Set<string>>();
  if (orgIds.length === 0) return subscribed;
  const rows = await queryPrepared<{ org_id: string; events: string[] }>(em, {
    sql: 'select org_id, events from webhook_endpoints where org_id = any(:orgIds::text[]) and enabled',
    params: { orgIds: arrayLiteral([...new Set(orgIds)]) },
  });
  for (const row of rows) {
    const types = subscribed.get(row.org_id) ?? new Set<string>();
    for (const type of row.events) types.add(type);
    subscribed.set(row.org_id, types);
  }
  return subscribed;
}
