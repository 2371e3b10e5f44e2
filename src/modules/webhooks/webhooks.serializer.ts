import type { WebhookAttempt, WebhookDelivery, WebhookEndpoint } from '../../../db/entities/index.ts';

/** The webhook endpoint record (snake_case). Never carries the signing secret. */
export function serializeWebhook(endpoint: WebhookEndpoint) {
  return {
    id: endpoint.id,
    name: endpoint.name,
    url: endpoint.url,
    description: endpoint.description,
    events: endpoint.events,
    streams: endpoint.streams ?? null,
    enabled: endpoint.enabled,
    disabled_reason: endpoint.disabledReason ?? null,
    created_at: endpoint.createdAt.toISOString(),
    updated_at: endpoint.updatedAt.toISOString(),
  };
}

/** The creation response: the record and, this one time, its signing secret. */
export function serializeCreatedWebhook(created: { endpoint: WebhookEndpoint; secret: string }) {
  return { ...serializeWebhook(created.endpoint), secret: created.secret };
}

/** The answer of a rotation: the endpoint, its new secret (shown once) and the overlap's end. */
export function serializeRotatedWebhook(rotated: { endpoint: WebhookEndpoint; secret: string }) {
  return {
    ...serializeCreatedWebhook(rotated),
    previous_secret_expires_at: rotated.endpoint.previousSecretExpiresAt?.toISOString() ?? null,
  };
}

/** One HTTP attempt of a delivery. */
export function serializeAttempt(attempt: WebhookAttempt) {
  return {
    series: attempt.series,
    attempt: attempt.attemptNumber,
    started_at: attempt.startedAt.toISOString(),
    status_code: attempt.statusCode ?? null,
    latency_ms: attempt.latencyMs ?? null,
    error: attempt.error ?? null,
  };
}

/** The delivery record with its attempts (oldest first). */
export function serializeDelivery(delivery: WebhookDelivery, attempts: readonly WebhookAttempt[]) {
  return {
    id: delivery.id,
    webhook_id: delivery.webhookId,
    event_id: delivery.eventId,
    event_type: delivery.eventType,
    status: delivery.status,
    attempt_count: delivery.attemptCount,
    next_attempt_at: delivery.nextAttemptAt ? delivery.nextAttemptAt.toISOString() : null,
    last_response_status: delivery.lastResponseStatus ?? null,
    last_response_excerpt: delivery.lastResponseExcerpt ?? null,
    last_error: delivery.lastError ?? null,
    replay_count: delivery.replayCount,
    created_at: delivery.createdAt.toISOString(),
    updated_at: delivery.updatedAt.toISOString(),
    attempts: attempts.map(serializeAttempt),
  };
}
