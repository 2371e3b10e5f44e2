import type { EntityManager } from '@mikro-orm/postgresql';
import { Event } from '../../../db/entities/index.ts';
import { ALL_EVENTS, type EventType } from './events.schemas.ts';

export const API_VERSION = '1.0.0';

/**
 * Adds a subscriber-facing event to the unit of work of `em`, so it commits in the same
 * transaction as the change that caused it (the outbox the webhook fan-out reads). `type` must
 * be in the event catalog (src/modules/events/events.schemas.ts), which documents its `data`.
 */
export function recordEvent(em: EntityManager, orgId: string, type: EventType, data: Record<string, unknown>): Event {
  return em.create(Event, { orgId, type, apiVersion: API_VERSION, data });
}

/**
 * The event types each of `orgIds` has an enabled webhook endpoint for, read in the caller's
 * transaction (`*` stands for every type). A hot path that writes many events (the group commit
 * of accepted sends) leaves out the types nobody subscribes to: an endpoint receives only
 * events written after it existed, so such an event would never be delivered to anyone.
 */
export async function subscribedEventTypes(em: EntityManager, orgIds: readonly string[]): Promise<Map<string, Set<string>>> {
  const subscribed = new Map<string, Set<string>>();
  if (orgIds.length === 0) return subscribed;
  const rows = await em.execute<{ org_id: string; events: string[] }[]>(
    'select org_id, events from webhook_endpoints where org_id in (?) and enabled',
    [[...new Set(orgIds)]],
  );
  for (const row of rows) {
    const types = subscribed.get(row.org_id) ?? new Set<string>();
    for (const type of row.events) types.add(type);
    subscribed.set(row.org_id, types);
  }
  return subscribed;
}

/** Whether an event of `type` has a subscriber in `subscribed` (from subscribedEventTypes). */
export function isSubscribed(subscribed: ReadonlyMap<string, ReadonlySet<string>>, orgId: string, type: EventType): boolean {
  const types = subscribed.get(orgId);
  return types !== undefined && (types.has(ALL_EVENTS) || types.has(type));
}
