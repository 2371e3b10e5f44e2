import { eventPayload } from './delivery.fns.ts';
import { signatureHeaders } from './signing.ts';
import { postWebhook, type PostOptions, type PostResult } from './webhook-http.ts';

/** One webhook request (`sendDelivery`: a fresh signature, same delivery id on every attempt). */

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
    ...signatureHeaders({
      secret: request.secret,
      previousSecret: request.previousSecret,
      deliveryId: delivery.id,
      timestamp: Math.floor(Date.now() / 1000),
      body,
    }),
  };
  return postWebhook(request.url, headers, body, request.http);
}
