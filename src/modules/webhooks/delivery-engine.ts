import type { MikroORM } from '@mikro-orm/postgresql';
import type { WebhookDeliveryStatus } from '../../../db/entities/index.ts';
import type { WebhookEndpointInput } from '../../../workflows/webhook-endpoint.ts';
import { findDeliveryStatus } from './deliveries.repo.ts';
import { eventPayload } from './delivery.fns.ts';
import { signatureHeaders } from './signing.ts';
import { postWebhook, type PostOptions, type PostResult } from './webhook-http.ts';

/**
 * One webhook request (`sendDelivery`: a fresh signature, same delivery id on every attempt),
 * and the hand-over of deliveries whose per-delivery workflow (`deliverWebhook`, the design
 * before endpoint actors) is still running after an upgrade (`handOverLegacyAttempt`).
 */

// Kept importable from here (bench and tests use them); they live in delivery.fns.ts.
export { eventPayload, MAX_RETRY_AFTER_MS, MIN_RETRY_AFTER_MS, nextDelay } from './delivery.fns.ts';

export const WEBHOOK_USER_AGENT = 'Herald-Webhooks/1.0';
/** The error recorded for an attempt whose worker stopped before its answer was recorded. */
export const ABANDONED_ERROR =
  'abandoned: the attempt was interrupted (worker stopped) before its answer was recorded; the receiver may have received it';

export interface DeliveryRequest {
  url: string;
  secret: string;
  /** The replaced secret while a rotation's overlap lasts (a second signature). */
  previousSecret?: string | null;
  delivery: { id: string; event_id: string; event_type: string; api_version: string; data: unknown; event_created_ms: number };
  http: PostOptions;
}

/** Signs the event for this attempt and POSTs it (webhook-http.ts: SSRF-checked, no redirects, 15 s). */
export function sendDelivery(request: DeliveryRequest): Promise<PostResult> {
  const { delivery } = request;
  const body = eventPayload(delivery);
  const headers = {
    'Content-Type': 'application/json',
    'User-Agent': WEBHOOK_USER_AGENT,
    'Herald-Event-Id': delivery.event_id,
    'Herald-Delivery-Id': delivery.id,
    'Herald-Event-Type': delivery.event_type,
    ...signatureHeaders({ secret: request.secret, previousSecret: request.previousSecret, deliveryId: delivery.id, timestamp: Math.floor(Date.now() / 1000), body }),
  };
  return postWebhook(request.url, headers, body, request.http);
}

/** What the legacy `attemptWebhookDelivery` activity is asked (the deliverWebhook workflow's input). */
export interface LegacyAttemptInput {
  orgId: string;
  deliveryId: string;
  series: number;
  attemptNumber: number;
  schedule: number[] | null;
  jitter: number;
}

export interface LegacyAttemptResult {
  outcome: 'delivered' | 'retry' | 'exhausted' | 'busy' | 'stopped';
  status: WebhookDeliveryStatus | null;
  nextDelayMs: number | null;
  schedule: number[];
  statusCode: number | null;
  error: string | null;
}

/**
 * A deliverWebhook run started before the upgrade asks for an attempt: the row is already on
 * its endpoint's queue (queued or failed with its due time, or delivering with a lapsing
 * lease), so the endpoint actor is woken to own it and the run is told to stop. Nothing is
 * sent from here, so no attempt is made twice.
 */
export async function handOverLegacyAttempt(
  orm: MikroORM,
  input: LegacyAttemptInput,
  wake: (endpoints: WebhookEndpointInput[]) => Promise<void>,
): Promise<LegacyAttemptResult> {
  const row = await findDeliveryStatus(orm.em, input.orgId, input.deliveryId);
  if (row && row.status !== 'delivered' && row.status !== 'exhausted') await wake([{ orgId: input.orgId, endpointId: row.webhook_id }]);
  return { outcome: 'stopped', status: row?.status ?? null, nextDelayMs: null, schedule: input.schedule ?? [], statusCode: null, error: null };
}
