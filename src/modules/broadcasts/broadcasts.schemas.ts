import * as v from 'valibot';
import { TrackingSettingSchema } from '../tracking/tracking.schemas.ts';
import { Timestamp } from '../../http/schemas.ts';
import { DATE_TIME_PATTERN, isDateTime } from './broadcasts.fns.ts';
import { EventCounts } from '../metrics/metrics.schemas.ts';
import { StreamName } from '../streams/streams.schemas.ts';

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

const Name = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(200, 'must be at most 200 characters'));
const PreviewText = v.pipe(v.string(), v.maxLength(200, 'must be at most 200 characters'));
const SegmentIds = v.pipe(
  v.array(v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(64, 'is not a segment id'))),
  v.minLength(1, 'must name at least one segment'),
  v.maxLength(MAX_SEGMENTS, `must name at most ${MAX_SEGMENTS} segments`),
);
const Html = v.pipe(v.string(), v.maxLength(MAX_HTML_LENGTH, `must be at most ${MAX_HTML_LENGTH} characters`));
const PlainText = v.pipe(v.string(), v.maxLength(MAX_PLAIN_TEXT_LENGTH, `must be at most ${MAX_PLAIN_TEXT_LENGTH} characters`));

export const CreateBroadcastBody = v.strictObject({
  name: Name,
  subject: HeaderText(500),
  preview_text: v.optional(PreviewText, ''),
  from_name: HeaderText(100),
  from_email: Email,
  reply_to: v.optional(Email),
  segment_ids: SegmentIds,
  html: v.optional(Html, ''),
  plain_text: v.optional(PlainText, ''),
  scheduled_at: v.optional(DateTime),
  /** Herald extension: the message stream of its messages, `broadcast` when absent, or a custom stream of the broadcast kind. */
  stream: v.optional(StreamName),
});

export type CreateBroadcastInput = v.InferOutput<typeof CreateBroadcastBody>;

/**
 * PATCH /outbox/broadcasts/{id} (Herald extension; the scope outbox.broadcasts:write "create and
 * update broadcast drafts and schedules"): the create body's fields, each optional; `reply_to`
 * and `scheduled_at` null clear them. Only a draft can be changed.
 */
export const UpdateBroadcastBody = v.strictObject({
  name: v.optional(Name),
  subject: v.optional(HeaderText(500)),
  preview_text: v.optional(PreviewText),
  from_name: v.optional(HeaderText(100)),
  from_email: v.optional(Email),
  reply_to: v.optional(v.nullable(Email)),
  segment_ids: v.optional(SegmentIds),
  html: v.optional(Html),
  plain_text: v.optional(PlainText),
  scheduled_at: v.optional(v.nullable(DateTime)),
  stream: v.optional(StreamName),
});

export type UpdateBroadcastInput = v.InferOutput<typeof UpdateBroadcastBody>;

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
  /** Herald extension: the message stream of its messages. */
  stream: v.string(),
});

export const DeletedBroadcastResponse = v.object({ _id: v.string(), deleted: v.literal(true) });
