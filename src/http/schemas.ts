import * as v from 'valibot';

/** JSON Schema for valibot schemas that to-json-schema cannot convert by itself (custom checks). */
export const JSON_SCHEMA_OVERRIDES = new WeakMap<object, Record<string, unknown>>();

/** A JSON object (`{}`), not an array or null: valibot's `record` alone also accepts arrays. */
export const JsonObject = v.custom<Record<string, unknown>>(
  (input) => typeof input === 'object' && input !== null && !Array.isArray(input),
  'must be a JSON object',
);
JSON_SCHEMA_OVERRIDES.set(JsonObject, { type: 'object' });

/** Shared request and response schemas: ids, pages, the envelopes. */
export const IdSchema = v.pipe(v.string(), v.regex(/^[a-fA-F0-9]{24}$/, 'must be a 24-character hexadecimal id'));

export const IdParams = v.object({ id: IdSchema });

export const PageQuery = v.object({
  limit: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\d{1,3}$/, 'must be an integer from 1 to 100'),
      v.transform(Number),
      v.minValue(1, 'must be an integer from 1 to 100'),
      v.maxValue(100, 'must be an integer from 1 to 100'),
    ),
    '50',
  ),
  cursor: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(1024))),
});

export const Timestamp = v.pipe(v.string(), v.isoTimestamp());

export const DeleteResult = v.object({ _id: v.string(), deleted: v.boolean() });
