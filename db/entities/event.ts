import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn } from './columns.ts';

/**
 * The outbox of subscriber-facing events, written in the same transaction as the change
 * that caused it. `fannedOutAt` is set once a delivery exists for every subscribed endpoint.
 */
export const EventSchema = defineEntity({
  name: 'Event',
  tableName: 'events',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn(),
    type: p.string().length(100),
    apiVersion: p.string().length(16).default('1.0.0'),
    data: p.json<Record<string, unknown>>(),
    fannedOutAt: p.datetime().nullable(),
    createdAt: createdAtColumn(),
  },
  indexes: [{ properties: ['orgId', 'type', 'createdAt'] }],
});

export class Event extends EventSchema.class {}
EventSchema.setClass(Event);
