import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn, updatedAtColumn } from './columns.ts';

export const CONTACT_STATUSES = ['active', 'unsubscribed', 'bounced', 'complained', 'suppressed'] as const;
export type ContactStatus = (typeof CONTACT_STATUSES)[number];

/** A contact; `email` is normalised and unique per workspace. Tags carry a GIN index. */
export const ContactSchema = defineEntity({
  name: 'Contact',
  tableName: 'contacts',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    email: p.string().length(320),
    firstName: p.string().length(200).default(''),
    lastName: p.string().length(200).default(''),
    company: p.string().length(200).default(''),
    tags: p.array().default([]),
    customFields: p.json<Record<string, unknown>>().defaultRaw(`'{}'`),
    status: p.enum(CONTACT_STATUSES).default('active'),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
  uniques: [{ properties: ['orgId', 'email'] }],
  indexes: [
    { properties: ['tags'], type: 'gin' },
    // Keyset pages (newest first) read this index instead of sorting the workspace's contacts.
    { properties: ['orgId', 'createdAt', 'id'] },
    // The dashboard's search (a part of the email or name, any case): trigrams of the three.
    {
      name: 'contacts_search_index',
      expression: `create index "contacts_search_index" on "contacts" using gin ((lower("email" || ' ' || "first_name" || ' ' || "last_name")) gin_trgm_ops)`,
    },
    // The automation date trigger's scan: the dates of custom fields, only contacts with one (migration 20261128140100).
    {
      name: 'contacts_date_keys_index',
      expression: `create index "contacts_date_keys_index" on "contacts" using gin (herald_contact_custom_date_keys("custom_fields")) where herald_contact_has_date_field("custom_fields")`,
    },
    // GET /contacts?search= (a prefix of the email, the full name or the last name, any case): range scans whatever the collation.
    // Status filters (every status but the common `active`), in page order, small: migration 20261129060000.
    {
      name: 'contacts_status_index',
      expression: `create index "contacts_status_index" on "contacts" ("org_id", "status", "created_at", "id") where "status" <> 'active'`,
    },
    {
      name: 'contacts_email_prefix_index',
      expression: `create index "contacts_email_prefix_index" on "contacts" ("org_id", lower("email") text_pattern_ops)`,
    },
    {
      name: 'contacts_full_name_prefix_index',
      expression: `create index "contacts_full_name_prefix_index" on "contacts" ("org_id", lower("first_name" || ' ' || "last_name") text_pattern_ops)`,
    },
    {
      name: 'contacts_last_name_prefix_index',
      expression: `create index "contacts_last_name_prefix_index" on "contacts" ("org_id", lower("last_name") text_pattern_ops)`,
    },
  ],
});

export class Contact extends ContactSchema.class {}
ContactSchema.setClass(Contact);
