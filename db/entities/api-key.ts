import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn } from './columns.ts';

export const API_KEY_MODES = ['live', 'test'] as const;
export type ApiKeyMode = (typeof API_KEY_MODES)[number];

/**
 * An API key. The secret is never stored: `prefix` (the first characters of the key, unique)
 * finds the row and `secretHash` (SHA-256 hex of the whole key) proves possession.
 */
export const ApiKeySchema = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn(),
    userId: p.string().length(24),
    name: p.string().length(200),
    prefix: p.string().length(32).unique(),
    secretHash: p.string().length(64),
    mode: p.enum(API_KEY_MODES),
    audience: p.string().length(32).default('public_api'),
    scopes: p.array().default([]),
    rateLimitPerMinute: p.integer().nullable(),
    rateLimitBurst: p.integer().nullable(),
    revokedAt: p.datetime().nullable(),
    /** After this the key is refused like a revoked one; null: it does not expire. */
    expiresAt: p.datetime().nullable(),
    lastUsedAt: p.datetime().nullable(),
    /** The key that created this one through the API (null: made by an operator or in the dashboard); revoking it revokes this one. */
    parentKeyId: p.string().length(24).nullable().index(),
    createdAt: createdAtColumn(),
  },
});

export class ApiKey extends ApiKeySchema.class {}
ApiKeySchema.setClass(ApiKey);
