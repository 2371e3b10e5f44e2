import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn, updatedAtColumn } from './columns.ts';

/** A broadcast to segments; created as a draft over the API. */
export const BroadcastSchema = defineEntity({
  name: 'Broadcast',
  tableName: 'broadcasts',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn(),
    name: p.string().length(200),
    subject: p.string().length(500),
    previewText: p.string().length(200).default(''),
    fromName: p.string().length(100),
    fromEmail: p.string().length(320),
    replyTo: p.string().length(320).nullable(),
    segmentIds: p.array().default([]),
    html: p.text().default(''),
    plainText: p.text().default(''),
    status: p.string().length(32).default('draft'),
    scheduledAt: p.datetime().nullable(),
    metrics: p.json<Record<string, number>>().defaultRaw(`'{}'`),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});

export class Broadcast extends BroadcastSchema.class {}
BroadcastSchema.setClass(Broadcast);
