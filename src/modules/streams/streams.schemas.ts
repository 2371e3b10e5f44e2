import * as v from 'valibot';
import { STREAM_KINDS } from '../../../db/entities/index.ts';
import { Timestamp } from '../../http/schemas.ts';

/** A stream's name: what a send's `stream` field and the X-Herald-Stream header give. */
export const StreamName = v.pipe(
  v.string(),
  v.regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must be 1 to 64 lower-case letters, digits, _ or -, starting with a letter or digit'),
);

const DailyCap = v.nullable(
  v.pipe(v.number(), v.integer('must be an integer'), v.minValue(1, 'must be at least 1'), v.maxValue(100_000_000)),
);
const Description = v.pipe(v.string(), v.maxLength(500, 'must be at most 500 characters'));

export const CreateStreamBody = v.strictObject({
  name: StreamName,
  kind: v.picklist(STREAM_KINDS, `must be one of ${STREAM_KINDS.join(', ')}`),
  description: v.optional(Description),
  /** Recipients accepted per UTC day at most; absent or null: no budget. */
  daily_cap: v.optional(DailyCap),
});
export type CreateStreamInput = v.InferOutput<typeof CreateStreamBody>;

export const UpdateStreamBody = v.strictObject({
  description: v.optional(Description),
  daily_cap: v.optional(DailyCap),
});
export type UpdateStreamInput = v.InferOutput<typeof UpdateStreamBody>;

export const StreamParams = v.object({ name: StreamName });

export const StreamResponse = v.object({
  name: v.string(),
  kind: v.picklist(STREAM_KINDS),
  /** `transactional` and `broadcast` exist in every workspace and cannot be deleted. */
  built_in: v.boolean(),
  description: v.string(),
  daily_cap: v.nullable(v.number()),
  /** Recipients accepted on the current UTC day, against `daily_cap`. */
  sent_today: v.number(),
  created_at: v.nullable(Timestamp),
});

export const DeletedStreamResponse = v.object({ name: v.string(), deleted: v.literal(true) });
