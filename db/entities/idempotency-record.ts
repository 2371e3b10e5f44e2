import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn } from './columns.ts';

export const IDEMPOTENCY_STATES = ['running', 'completed'] as const;

/**
 * A write request remembered under its Idempotency-Key (scope: workspace + API key).
 * `fingerprint` is a hash of method, path and canonical body. Rows expire after 24 h and a
 * Temporal Schedule deletes them.
 */
export const IdempotencyRecordSchema = defineEntity({
  name: 'IdempotencyRecord',
  tableName: 'idempotency_records',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    apiKeyId: p.string().length(24),
    key: p.string().length(128),
    fingerprint: p.string().length(64),
    state: p.enum(IDEMPOTENCY_STATES).default('running'),
    responseStatus: p.integer().nullable(),
    responseBody: p.json<Record<string, unknown>>().columnType('json').nullable(),
    createdAt: createdAtColumn(),
    expiresAt: p.datetime().index(),
  },
  uniques: [{ properties: ['orgId', 'apiKeyId', 'key'] }],
});

export class IdempotencyRecord extends IdempotencyRecordSchema.class {}
IdempotencyRecordSchema.setClass(IdempotencyRecord);
