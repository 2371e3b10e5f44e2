import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn, updatedAtColumn } from './columns.ts';

/**
 * A segment of contacts; membership is computed from `type` and `tags`. `memberCount` is stored
 * (Migration20261129050000): exact for a static segment (triggers on segment_members keep it
 * in every membership write's transaction), the last full count taken at `countedAt` for a
 * dynamic one (null: not counted yet).
 */
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
    memberCount: p.integer().nullable(),
    countedAt: p.datetime().nullable(),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});

export class Segment extends SegmentSchema.class {}
SegmentSchema.setClass(Segment);

/**
 * A contact listed in a `static` segment (membership managed through the API). Removed with
 * the contact; the segment's member count is the count of its rows, kept in
 * `segments.member_count` by the triggers below.
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
  // The segments' stored counts (the function is Migration20261129050000's).
  triggers: [
    {
      name: 'segment_members_count_insert',
      timing: 'after',
      events: ['insert'],
      forEach: 'statement',
      expression: `create trigger "segment_members_count_insert" after insert on "segment_members" referencing new table as herald_inserted_members for each statement execute function herald_segment_member_count_fn()`,
    },
    {
      name: 'segment_members_count_delete',
      timing: 'after',
      events: ['delete'],
      forEach: 'statement',
      expression: `create trigger "segment_members_count_delete" after delete on "segment_members" referencing old table as herald_deleted_members for each statement execute function herald_segment_member_count_fn()`,
    },
  ],
});

export class SegmentMember extends SegmentMemberSchema.class {}
SegmentMemberSchema.setClass(SegmentMember);
