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
    /** Whether sends past the credit balance are taken and billed as overage (the balance itself is in credit_shards). */
    overageEnabled: p.boolean().default(false),
    /** Workspace-wide rate-limit profile; null means the platform default. */
    rateLimitPerMinute: p.integer().nullable(),
    rateLimitBurst: p.integer().nullable(),
    /** The sender's postal address, printed in every broadcast's footer (CAN-SPAM, and what inbox providers expect). */
    postalAddress: p.string().length(500).nullable(),
    /** The workspace's warm-up plan and reputation policy (null: the defaults), see src/modules/warmup. */
    warmupPlan: p.json<Record<string, unknown>>().nullable(),
    reputationPolicy: p.json<Record<string, unknown>>().nullable(),
    /** Set while the reputation policy holds the workspace's sending paused; why, in reputationPause. */
    reputationPausedAt: p.datetime().nullable(),
    reputationPause: p.json<Record<string, unknown>>().nullable(),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});

export class Organization extends OrganizationSchema.class {}
OrganizationSchema.setClass(Organization);

/**
 * A workspace's transactional credits, split over a fixed number of shard rows (one consumed
 * per recipient). An acceptance locks one shard, so concurrent sends of one workspace do not
 * queue on a single row; the balance is the sum of the shards (see src/modules/sends/quota.repo.ts).
 */
export const CreditShardSchema = defineEntity({
  name: 'CreditShard',
  tableName: 'credit_shards',
  properties: {
    orgId: p.string().length(24).primary(),
    shard: p.smallint().primary(),
    balance: p.integer().default(0),
    /** Recipients sent beyond the balance while overage was enabled (billed separately). */
    overageUsed: p.integer().default(0),
  },
});

export class CreditShard extends CreditShardSchema.class {}
CreditShardSchema.setClass(CreditShard);
