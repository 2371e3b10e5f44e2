import type { EntityManager } from '@mikro-orm/postgresql';
import { Event } from '../../../db/entities/index.ts';
import { ALL_EVENTS, isAddressedType, type EventType } from './events.schemas.ts';

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
 * Whether an event of `type` has a subscriber in `subscribed` (from findSubscribedEventTypes,
 * webhook-subscriptions.repo.ts). An addressed type (`automation.webhook`) always has one: it
 * goes to the endpoint it names, subscribed or not.
 */
export function isSubscribed(subscribed: ReadonlyMap<string, ReadonlySet<string>>, orgId: string, type: EventType): boolean {
  if (isAddressedType(type)) return true;
  const types = subscribed.get(orgId);
  return types !== undefined && (types.has(ALL_EVENTS) || types.has(type));
}
