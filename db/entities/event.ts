import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn } from './columns.ts';

/** NOTIFY channel the webhook outbox relay listens on (one notification per committed insert statement). */
export const EVENTS_NOTIFY_CHANNEL = 'herald_events';

/**
 * The outbox of subscriber-facing events, written in the same transaction as the change
 * that caused it. `fannedOutAt` is set once a delivery exists for every subscribed endpoint.
 * An insert notifies `herald_events` (delivered at commit) so the relay reacts at once; the
 * partial index keeps the relay's scan for unfanned events cheap however large the table grows.
 */
export const EventSchema = defineEntity({
  name: 'Event',
  tableName: 'events',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    type: p.string().length(100),
    apiVersion: p.string().length(16).default('1.0.0'),
    data: p.json<Record<string, unknown>>(),
    fannedOutAt: p.datetime().nullable(),
    createdAt: createdAtColumn(),
  },
  indexes: [
    { properties: ['orgId', 'type', 'createdAt'] },
    { name: 'events_unfanned_index', properties: ['createdAt', 'id'], where: { fannedOutAt: null } },
  ],
  triggers: [
    {
      name: 'events_notify_relay',
      timing: 'after',
      events: ['insert'],
      forEach: 'statement',
      body: `perform pg_notify('${EVENTS_NOTIFY_CHANNEL}', ''); return null;`,
    },
  ],
});

export class Event extends EventSchema.class {}
EventSchema.setClass(Event);
