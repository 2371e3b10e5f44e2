import * as v from 'valibot';
import { TrackingSettingSchema } from '../tracking/tracking.schemas.ts';
import { Timestamp } from '../../http/schemas.ts';
import { DATE_TIME_PATTERN, isDateTime } from './broadcasts.fns.ts';
import { EventCounts } from '../metrics/metrics.schemas.ts';

/** Sizes of the bodies, the same as a transactional email's html / text (spec, Limits). */
export const MAX_HTML_LENGTH = 500_000;
export const MAX_PLAIN_TEXT_LENGTH = 200_000;
/** Segments one broadcast may target (Herald's bound; the spec only says at least one). */
export const MAX_SEGMENTS = 100;

const NO_LINE_BREAKS = /^[^\r\n]*$/;

/** A display string that ends up in a header: trimmed, bounded, on one line. */
const HeaderText = (max: number) =>
  v.pipe(
    v.string(),
    v.trim(),
    v.minLength(1, 'must not be empty'),
    v.maxLength(max, `must be at most ${max} characters`),
    v.regex(NO_LINE_BREAKS, 'must not contain line breaks'),
  );

const Email = v.pipe(v.string(), v.trim(), v.maxLength(320), v.email('must be a valid email address'));

const DateTime = v.pipe(
  v.string(),
  v.regex(DATE_TIME_PATTERN, 'must be an RFC 3339 date-time, e.g. 2026-11-21T09:00:00Z'),
  v.check(isDateTime, 'must be a real calendar date'),
);

export const CreateBroadcastBody = v.strictObject({
  name: v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(200, 'must be at most 200 characters')),
  subject: HeaderText(500),
  preview_text: v.optional(v.pipe(v.string(), v.maxLength(200, 'must be at most 200 characters')), ''),
  from_name: HeaderText(100),
  from_email: Email,
  reply_to: v.optional(Email),
  segment_ids: v.pipe(
    v.array(v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(64, 'is not a segment id'))),
    v.minLength(1, 'must name at least one segment'),
    v.maxLength(MAX_SEGMENTS, `must name at most ${MAX_SEGMENTS} segments`),
  ),
  html: v.optional(v.pipe(v.string(), v.maxLength(MAX_HTML_LENGTH, `must be at most ${MAX_HTML_LENGTH} characters`)), ''),
  plain_text: v.optional(v.pipe(v.string(), v.maxLength(MAX_PLAIN_TEXT_LENGTH, `must be at most ${MAX_PLAIN_TEXT_LENGTH} characters`)), ''),
  scheduled_at: v.optional(DateTime),
});

export type CreateBroadcastInput = v.InferOutput<typeof CreateBroadcastBody>;

export const BroadcastMetricsResponse = v.object({ recipients: v.pipe(v.number(), v.integer(), v.minValue(0)), ...EventCounts });

/**
 * POST /outbox/broadcasts/{id}/send: send now, at the draft's scheduled_at, or at the time given
 * here (null: now); `tracking` switches the open pixel and tracked links (both on by default;
 * `false` for neither, or `{ "opens": false }` for one).
 */
export const LaunchBroadcastBody = v.strictObject({
  scheduled_at: v.optional(v.nullable(DateTime)),
  tracking: v.optional(TrackingSettingSchema),
});

export type LaunchBroadcastInput = v.InferOutput<typeof LaunchBroadcastBody>;

export const BroadcastResponse = v.object({
  _id: v.string(),
  name: v.string(),
  subject: v.string(),
  previewText: v.string(),
  fromName: v.string(),
  fromEmail: v.pipe(v.string(), v.email()),
  groupIds: v.array(v.string()),
  status: v.string(),
  scheduledAt: v.nullable(Timestamp),
  metrics: BroadcastMetricsResponse,
  createdAt: Timestamp,
});
