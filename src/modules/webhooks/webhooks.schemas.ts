import * as v from 'valibot';
import { StreamName } from '../streams/streams.schemas.ts';
import { WEBHOOK_DELIVERY_STATUSES } from '../../../db/entities/index.ts';
import { IdSchema, PageQuery, Timestamp } from '../../http/schemas.ts';
import { ALL_EVENTS, EVENT_TYPES } from '../events/events.schemas.ts';

export const WEBHOOK_LIMITS = { name: 200, url: 2048, description: 500, events: 100 } as const;

const Integer = v.pipe(v.number(), v.integer());

/** Structural URL rules; the key-mode (https) and target-address rules are the service's. */
const WebhookUrl = v.pipe(
  v.string(),
  v.minLength(1, 'must not be empty'),
  v.maxLength(WEBHOOK_LIMITS.url),
  v.regex(/^[^\s\p{Cc}]+$/u, 'must not contain spaces or control characters'),
  v.url('must be an absolute http or https URL'),
  v.check((value) => {
    const url = URL.parse(value);
    return url === null || ((url.protocol === 'https:' || url.protocol === 'http:') && url.hostname !== '');
  }, 'must be an absolute http or https URL'),
  v.check((value) => {
    const url = URL.parse(value);
    return url === null || (url.username === '' && url.password === '');
  }, 'must not contain credentials (user:password@)'),
);

const EventName = v.picklist(
  [ALL_EVENTS, ...EVENT_TYPES],
  (issue) => `unknown event type ${issue.received}; the catalog is at /docs/events`,
);

const Name = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(WEBHOOK_LIMITS.name));
const Events = v.pipe(v.array(EventName), v.minLength(1, 'must list at least one event type'), v.maxLength(WEBHOOK_LIMITS.events));
const Description = v.pipe(v.string(), v.maxLength(WEBHOOK_LIMITS.description));
/** The message streams whose email events the endpoint receives (Herald extension); null or absent: every stream. */
const Streams = v.nullable(
  v.pipe(v.array(StreamName), v.minLength(1, 'must list at least one stream (null: every stream)'), v.maxLength(100)),
);

export const CreateWebhookBody = v.strictObject({
  name: Name,
  url: WebhookUrl,
  events: Events,
  description: v.optional(Description, ''),
  enabled: v.optional(v.boolean(), true),
  streams: v.optional(Streams, null),
});

export type CreateWebhookInput = v.InferOutput<typeof CreateWebhookBody>;

export const UPDATABLE_WEBHOOK_FIELDS = ['name', 'url', 'events', 'description', 'enabled', 'streams'] as const;

/** PATCH: any of the creation fields, same rules; at least one of them. */
export const UpdateWebhookBody = v.pipe(
  v.strictObject({
    name: v.optional(Name),
    url: v.optional(WebhookUrl),
    events: v.optional(Events),
    description: v.optional(Description),
    enabled: v.optional(v.boolean()),
    streams: v.optional(Streams),
  }),
  v.check(
    (body) => Object.values(body).some((value) => value !== undefined),
    `must set at least one of ${UPDATABLE_WEBHOOK_FIELDS.join(', ')}`,
  ),
);

export type UpdateWebhookInput = v.InferOutput<typeof UpdateWebhookBody>;

const DeliveryStatus = v.picklist(WEBHOOK_DELIVERY_STATUSES, `must be one of ${WEBHOOK_DELIVERY_STATUSES.join(', ')}`);

export const ListDeliveriesQuery = v.object({
  ...PageQuery.entries,
  webhook_id: v.optional(IdSchema),
  status: v.optional(DeliveryStatus),
});

/** The webhook endpoint record (snake_case, like the creation request). */
export const WebhookResponse = v.object({
  id: v.string(),
  name: v.string(),
  url: v.string(),
  description: v.string(),
  events: v.array(v.string()),
  /** The message streams whose email events it receives; null: every stream (Herald extension). */
  streams: v.nullable(v.array(v.string())),
  enabled: v.boolean(),
  disabled_reason: v.nullable(v.string()),
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** DELETE: the removed endpoint's id (the shape of every delete in the API). */
export const DeletedWebhookResponse = v.object({ _id: v.string(), deleted: v.literal(true) });

/** The creation response: the record plus its signing secret, shown this once. */
export const CreatedWebhookResponse = v.object({
  ...WebhookResponse.entries,
  secret: v.pipe(v.string(), v.startsWith('whsec_')),
});

/** How long the replaced secret keeps signing after a rotation (Herald's bounds). */
export const ROTATION_OVERLAP = { defaultSeconds: 24 * 3600, maxSeconds: 7 * 24 * 3600 } as const;

/** POST /webhooks/{id}/rotate-secret: an optional overlap (an empty body takes the default). */
export const RotateSecretBody = v.strictObject({
  overlap_seconds: v.optional(
    v.pipe(
      Integer,
      v.minValue(0, 'must be 0 or more'),
      v.maxValue(ROTATION_OVERLAP.maxSeconds, `must be at most ${ROTATION_OVERLAP.maxSeconds} (7 days)`),
      v.description(
        `How long deliveries also carry a signature with the replaced secret; 0 ends it now. Default ${ROTATION_OVERLAP.defaultSeconds} (24 h).`,
      ),
    ),
    ROTATION_OVERLAP.defaultSeconds,
  ),
});

export type RotateSecretInput = v.InferOutput<typeof RotateSecretBody>;

export const RotatedWebhookResponse = v.object({
  ...CreatedWebhookResponse.entries,
  previous_secret_expires_at: v.pipe(
    v.nullable(v.string()),
    v.description('Until when deliveries also carry a signature with the replaced secret; null with overlap 0.'),
  ),
});

export const WebhookAttemptResponse = v.object({
  series: Integer,
  attempt: Integer,
  started_at: Timestamp,
  status_code: v.nullable(Integer),
  latency_ms: v.nullable(Integer),
  error: v.nullable(v.string()),
});

export const WebhookDeliveryResponse = v.object({
  id: v.string(),
  webhook_id: v.string(),
  event_id: v.string(),
  event_type: v.string(),
  status: DeliveryStatus,
  attempt_count: Integer,
  next_attempt_at: v.nullable(Timestamp),
  last_response_status: v.nullable(Integer),
  last_response_excerpt: v.nullable(v.string()),
  last_error: v.nullable(v.string()),
  replay_count: Integer,
  created_at: Timestamp,
  updated_at: Timestamp,
  attempts: v.array(WebhookAttemptResponse),
});
