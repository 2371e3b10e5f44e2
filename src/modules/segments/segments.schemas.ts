import * as v from 'valibot';
import { Timestamp } from '../../http/schemas.ts';
import { SEGMENT_TYPES } from './segments.fns.ts';

/** A tag as contacts carry them (same bounds as contact tags): trimmed, 1 to 100 characters. */
const Tag = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(100));

/** POST /segments. `type` is not accepted: it follows from `tags` (see segments.fns.ts). */
export const CreateSegmentBody = v.strictObject({
  name: v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(120)),
  description: v.optional(v.pipe(v.string(), v.maxLength(500)), ''),
  tags: v.optional(v.pipe(v.array(Tag), v.maxLength(100)), []),
});

export type CreateSegmentInput = v.InferOutput<typeof CreateSegmentBody>;

/** The spec's Segment (camelCase). */
export const SegmentResponse = v.object({
  _id: v.string(),
  name: v.string(),
  description: v.string(),
  type: v.picklist(SEGMENT_TYPES),
  tags: v.array(v.string()),
  contactCount: v.pipe(v.number(), v.integer(), v.minValue(0)),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
