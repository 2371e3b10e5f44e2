import { Event, WebhookAttempt, WebhookDelivery, WebhookEndpoint, type WebhookDeliveryStatus } from '../../db/entities/index.ts';
import { randomBytes } from 'node:crypto';
import { scopeToOrg, type MikroORM } from '../../db/orm.ts';
import { encryptSecret } from '../../src/crypto/secret-box.ts';
import { unique } from './factories.ts';

/**
 * Webhook rows written directly (as the delivery engine would), for tests of the API side:
 * an endpoint, an event with a delivery to it in a given status, and its attempts.
 */
export async function insertEndpoint(
  orm: MikroORM,
  orgId: string,
  overrides: Partial<Pick<WebhookEndpoint, 'enabled' | 'events' | 'url' | 'disabledReason'>> = {},
): Promise<WebhookEndpoint> {
  const em = scopeToOrg(orm.em, orgId);
  const endpoint = em.create(WebhookEndpoint, {
    orgId,
    name: unique('endpoint'),
    url: overrides.url ?? 'https://receiver.example.com/hook',
    description: '',
    events: overrides.events ?? ['*'],
    enabled: overrides.enabled ?? true,
    secretEncrypted: 'enc:v1:not:a:secret',
    keyMode: 'test',
    disabledReason: overrides.disabledReason ?? null,
    disabledAt: null,
  });
  await em.flush();
  return endpoint;
}

export async function insertDelivery(
  orm: MikroORM,
  orgId: string,
  options: { webhookId?: string; status?: WebhookDeliveryStatus; type?: string; attempts?: number; createdAt?: Date } = {},
): Promise<WebhookDelivery> {
  const webhookId = options.webhookId ?? (await insertEndpoint(orm, orgId)).id;
  const em = scopeToOrg(orm.em, orgId);
  const type = options.type ?? 'contact.created';
  const event = em.create(Event, { orgId, type, apiVersion: '1.0.0', data: { contact: { _id: 'x' } } });
  await em.flush();
  const status = options.status ?? 'delivered';
  const attempts = options.attempts ?? (status === 'queued' ? 0 : 1);
  const finished = status === 'delivered' || status === 'exhausted';
  const delivery = em.create(WebhookDelivery, {
    orgId,
    webhookId,
    eventId: event.id,
    eventType: type,
    status,
    attemptCount: attempts,
    replayCount: 0,
    seriesAttempts: attempts,
    nextAttemptAt: finished ? null : new Date(Date.now() + 60_000),
    lastResponseStatus: attempts > 0 ? (status === 'delivered' ? 200 : 500) : null,
    lastResponseExcerpt: attempts > 0 ? (status === 'delivered' ? 'ok' : 'boom') : null,
    lastError: attempts > 0 && status !== 'delivered' ? 'http_error: 500' : null,
    ...(options.createdAt ? { createdAt: options.createdAt, updatedAt: options.createdAt } : {}),
  });
  await em.flush();
  for (let n = 1; n <= attempts; n += 1) {
    const ok = status === 'delivered' && n === attempts;
    em.create(WebhookAttempt, {
      orgId,
      deliveryId: delivery.id,
      series: 0,
      attemptNumber: n,
      startedAt: new Date(Date.now() - (attempts - n) * 1000),
      statusCode: ok ? 200 : 500,
      latencyMs: 10 + n,
      error: ok ? null : 'http_error: 500',
      responseExcerpt: ok ? 'ok' : 'boom',
    });
  }
  await em.flush();
  return delivery;
}

/** A webhook endpoint as the API answers it (the secret only in the creation response). */
export interface WebhookRecord {
  id: string;
  name: string;
  url: string;
  description: string;
  events: string[];
  enabled: boolean;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
  secret?: string;
}

/** A webhook delivery as the API answers it. */
export interface DeliveryRecord {
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: string;
  attempt_count: number;
  next_attempt_at: string | null;
  replay_count: number;
  last_error: string | null;
  attempts: {
    series: number;
    attempt: number;
    started_at: string;
    status_code: number | null;
    latency_ms: number | null;
    error: string | null;
  }[];
}

/** An endpoint with a real signing secret (sealed with `encryptionKey`), for tests that deliver to it. */
export async function insertSigningEndpoint(
  orm: MikroORM,
  encryptionKey: Buffer,
  orgId: string,
  url: string,
  events: string[] = ['*'],
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const em = scopeToOrg(orm.em, orgId);
  const endpoint = em.create(WebhookEndpoint, {
    orgId,
    name: unique('hook'),
    url,
    description: '',
    events,
    enabled: true,
    secretEncrypted: encryptSecret(encryptionKey, secret),
    keyMode: 'test',
    disabledReason: null,
    disabledAt: null,
  });
  await em.flush();
  return { endpoint, secret };
}
