import type { Segment } from '../../../db/entities/index.ts';
import type { SegmentType } from './segments.fns.ts';

/** The spec's Segment (camelCase), with its live member count. */
export function serializeSegment(segment: Segment, contactCount: number) {
  return {
    _id: segment.id,
    name: segment.name,
    description: segment.description,
    type: segment.type as SegmentType,
    tags: segment.tags,
    contactCount,
    createdAt: segment.createdAt.toISOString(),
    updatedAt: segment.updatedAt.toISOString(),
  };
}
