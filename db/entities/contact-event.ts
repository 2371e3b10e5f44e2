import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn } from './columns.ts';

/**
 * A custom event a contact did (POST /api/v1/events): kept so automations' `had_event`
 * conditions and goals can ask whether the contact had one, and since when.
 */
export const ContactEventSchema = defineEntity({
  name: 'ContactEvent',
  tableName: 'contact_events',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    contactId: p.string().length(24),
    name: p.string().length(100),
    properties: p.json<Record<string, unknown>>().defaultRaw(`'{}'`),
    createdAt: createdAtColumn(),
  },
  indexes: [{ name: 'contact_events_contact_index', properties: ['orgId', 'contactId', 'name', 'createdAt'] }],
});

export class ContactEvent extends ContactEventSchema.class {}
ContactEventSchema.setClass(ContactEvent);
