import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, updatedAtColumn } from './columns.ts';

/** A workspace: the tenant boundary of every other row. Not itself tenant-scoped. */
export const OrganizationSchema = defineEntity({
  name: 'Organization',
  tableName: 'organizations',
  properties: {
    id: idColumn(),
    name: p.string().length(200),
    slug: p.string().length(100).unique(),
    /** Transactional credits left; one is consumed per recipient. */
    creditBalance: p.integer().default(0),
    overageEnabled: p.boolean().default(false),
    /** Recipients sent beyond the balance while overage was enabled (billed separately). */
    overageUsed: p.integer().default(0),
    /** Workspace-wide rate-limit profile; null means the platform default. */
    rateLimitPerMinute: p.integer().nullable(),
    rateLimitBurst: p.integer().nullable(),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});

export class Organization extends OrganizationSchema.class {}
OrganizationSchema.setClass(Organization);
