import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn, updatedAtColumn } from './columns.ts';

/** A segment of contacts; membership is computed from `type` and `tags`. */
export const SegmentSchema = defineEntity({
  name: 'Segment',
  tableName: 'segments',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn(),
    name: p.string().length(120),
    description: p.string().length(500).default(''),
    type: p.string().length(32).default('tag'),
    tags: p.array().default([]),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});

export class Segment extends SegmentSchema.class {}
SegmentSchema.setClass(Segment);

/**
 * A contact listed in a `static` segment (membership managed through the API). Removed with
 * the contact; the segment's member count is the count of its rows.
 */
export const SegmentMemberSchema = defineEntity({
  name: 'SegmentMember',
  tableName: 'segment_members',
  properties: {
    segmentId: p.string().length(24).primary(),
    contactId: p.string().length(24).primary(),
    orgId: orgIdColumn(),
    createdAt: createdAtColumn(),
  },
  indexes: [{ properties: ['contactId'] }],
});

export class SegmentMember extends SegmentMemberSchema.class {}
SegmentMemberSchema.setClass(SegmentMember);
