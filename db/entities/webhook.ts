import { defineEntity, p } from '@mikro-orm/core';
import { API_KEY_MODES } from './api-key.ts';
import { createdAtColumn, idColumn, orgIdColumn, updatedAtColumn } from './columns.ts';

export const WEBHOOK_DELIVERY_STATUSES = ['queued', 'delivering', 'delivered', 'failed', 'exhausted'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

/**
 * A subscriber's endpoint. The signing secret is stored sealed with HERALD_ENCRYPTION_KEY
 * (`enc:v1:`); it is shown once, in the creation response. `keyMode` records which kind of key
 * registered it (test keys may use http URLs).
 */
export const WebhookEndpointSchema = defineEntity({
  name: 'WebhookEndpoint',
  tableName: 'webhook_endpoints',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn(),
    name: p.string().length(200),
    url: p.string().length(2048),
    description: p.string().length(500).default(''),
    events: p.array().default([]),
    /** The message streams whose email events it receives (Herald extension); null: every stream. */
    streams: p.array().nullable(),
    enabled: p.boolean().default(true),
    secretEncrypted: p.text(),
    /** The secret a rotation replaced (sealed), still signed with until `previousSecretExpiresAt`. */
    previousSecretEncrypted: p.text().nullable(),
    previousSecretExpiresAt: p.datetime().nullable(),
    keyMode: p.enum(API_KEY_MODES),
    /** Why Herald disabled it (e.g. the receiver answered 410 Gone), with when. */
    disabledReason: p.string().length(500).nullable(),
    disabledAt: p.datetime().nullable(),
    /**
     * Until when the endpoint's actor (`webhook-endpoint:<id>`) is draining: while it is in the
     * future the actor is awake and sees new rows by itself, so writers do not signal it.
     */
    drainLeaseUntil: p.datetime().nullable(),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});

export class WebhookEndpoint extends WebhookEndpointSchema.class {}
WebhookEndpointSchema.setClass(WebhookEndpoint);

/**
 * One event for one endpoint: a row of the endpoint's queue, drained by its actor
 * (`webhook-endpoint:<webhookId>`). Due when queued or failed with `next_attempt_at` passed, or
 * delivering with `lease_until` passed (its drain died mid-attempt).
 */
export const WebhookDeliverySchema = defineEntity({
  name: 'WebhookDelivery',
  tableName: 'webhook_deliveries',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    webhookId: p.string().length(24),
    eventId: p.string().length(24),
    eventType: p.string().length(100),
    status: p.enum(WEBHOOK_DELIVERY_STATUSES).default('queued'),
    attemptCount: p.integer().default(0),
    /** Replays so far; attempt series 0 is the original delivery. */
    replayCount: p.integer().default(0),
    /**
     * Attempts on record in the current series (`replay_count`): the highest attempt number of
     * that series, 0 after a replay. The claim reads it here instead of in webhook_attempts.
     */
    seriesAttempts: p.integer().default(0),
    nextAttemptAt: p.datetime().nullable(),
    /** While delivering: when the claim lapses and the attempt counts as abandoned. */
    leaseUntil: p.datetime().nullable(),
    lastResponseStatus: p.integer().nullable(),
    lastResponseExcerpt: p.string().length(1024).nullable(),
    lastError: p.string().length(1024).nullable(),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
  // One delivery per event and endpoint; event first, so it also serves the events' retention
  // (an event is kept while any delivery of it is) and the lookup of an event's delivery.
  uniques: [{ properties: ['eventId', 'webhookId'] }],
  indexes: [
    { properties: ['orgId', 'createdAt'] },
    { properties: ['orgId', 'webhookId', 'status'] },
    // The endpoint actor's claim and its next due time: the open rows of one endpoint by due time.
    {
      name: 'webhook_deliveries_due_index',
      properties: ['webhookId', 'nextAttemptAt', 'id'],
      where: { status: { $in: ['queued', 'failed'] } },
    },
    // Attempts cut off by a dead drain, and the reconciler's look for endpoints with due rows.
    { name: 'webhook_deliveries_delivering_index', properties: ['webhookId', 'leaseUntil'], where: { status: 'delivering' } },
  ],
});

export class WebhookDelivery extends WebhookDeliverySchema.class {}
WebhookDeliverySchema.setClass(WebhookDelivery);

/** One HTTP attempt of a delivery (series = replay number, 0 for the original). */
export const WebhookAttemptSchema = defineEntity({
  name: 'WebhookAttempt',
  tableName: 'webhook_attempts',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn(),
    deliveryId: p.string().length(24),
    series: p.integer().default(0),
    attemptNumber: p.integer(),
    startedAt: p.datetime(),
    statusCode: p.integer().nullable(),
    latencyMs: p.integer().nullable(),
    error: p.string().length(1024).nullable(),
    responseExcerpt: p.string().length(1024).nullable(),
    createdAt: createdAtColumn(),
  },
  uniques: [{ properties: ['deliveryId', 'series', 'attemptNumber'] }],
});

export class WebhookAttempt extends WebhookAttemptSchema.class {}
WebhookAttemptSchema.setClass(WebhookAttempt);
