import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { startApi, type RunningApi } from '../../src/main-api.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { idem } from '../support/api.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient } from '../support/http.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

interface Delivery {
  id: string;
  event_id: string;
  event_type: string;
  status: string;
  replay_count: number;
  attempts: { series: number; attempt: number; status_code: number | null }[];
}

/**
 * The whole path as a customer sees it: register an endpoint over the API, change a contact
 * over the API, receive the signed event, read the delivery log, replay it.
 */
describe('webhooks end to end (API → outbox → relay → Temporal → receiver)', () => {
  let stack: TestStack;
  let api: RunningApi;
  let worker: RunningWorker;
  let receiver: WebhookReceiver;
  let request: ReturnType<typeof apiClient>;
  let secret: string;
  const logger = createLogger('warn');

  beforeAll(async () => {
    installTemporalLogging(logger);
    stack = await createTestStack({ WEBHOOK_RETRY_SCHEDULE: '0s,1s,1s' });
    receiver = await startWebhookReceiver();
    api = await startApi(stack.config, createLogger('silent'));
    worker = await startWorker(stack.config, logger);
    const { key } = await createOrgWithKey(stack.orm, { scopes: ['all'], rateLimitPerMinute: 10_000, burst: 1_000 });
    request = apiClient(api.url, key);
    const created = await request('POST', '/api/v1/webhooks', {
      headers: idem(),
      body: { name: 'CRM sync', url: receiver.url('/hook'), events: ['contact.created', 'contact.updated'] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    secret = (created.body.data as { secret: string }).secret;
  }, 180_000);

  afterAll(async () => {
    await worker.shutdown();
    await api.close();
    await receiver.close();
    await stack.close();
  });

  async function deliveries(): Promise<Delivery[]> {
    const response = await request('GET', '/api/v1/webhooks/deliveries');
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.data as Delivery[];
  }

  it('delivers a signed contact.created that Stripe and Standard Webhooks libraries verify, and logs it', async () => {
    const contact = await request('POST', '/api/v1/contacts', { headers: idem(), body: { email: 'e2e@example.com' } });
    expect(contact.status).toBe(201);
    const [received] = await receiver.waitForRequests('/hook', 1, 30_000);
    const stripeEvent = new Stripe('sk_test_unused').webhooks.constructEvent(
      received!.body,
      received!.headers['herald-signature'] as string,
      secret,
    );
    expect(stripeEvent).toMatchObject({ object: 'event', type: 'contact.created', api_version: '1.0.0' });
    const standard = new Webhook(secret.slice('whsec_'.length)).verify(received!.body, {
      'webhook-id': received!.headers['webhook-id'] as string,
      'webhook-timestamp': received!.headers['webhook-timestamp'] as string,
      'webhook-signature': received!.headers['webhook-signature'] as string,
    });
    expect((standard as { data: { contact: { _id: string } } }).data.contact._id).toBe((contact.body.data as { _id: string })._id);

    const delivered = await waitFor(
      'the delivery log to show delivered',
      async () => {
        const [first] = await deliveries();
        return first?.status === 'delivered' ? first : undefined;
      },
      30_000,
    );
    expect(delivered).toMatchObject({ event_type: 'contact.created', replay_count: 0 });
    expect(delivered.event_id).toBe(received!.headers['herald-event-id']);
    expect(delivered.id).toBe(received!.headers['herald-delivery-id']);
    expect(delivered.attempts).toEqual([expect.objectContaining({ series: 0, attempt: 1, status_code: 200 })]);
  }, 120_000);

  it('replays a delivered delivery with the same delivery and event ids and a new attempt series', async () => {
    const [original] = await deliveries();
    const replay = await request('POST', `/api/v1/webhooks/deliveries/${original!.id}/replay`, { headers: idem() });
    expect(replay.status, JSON.stringify(replay.body)).toBe(202);
    expect(replay.body.data).toMatchObject({ id: original!.id, event_id: original!.event_id, status: 'queued', replay_count: 1 });
    const requests = await receiver.waitForRequests('/hook', 2, 30_000);
    expect(requests[1]!.headers['herald-delivery-id']).toBe(original!.id);
    expect(requests[1]!.headers['herald-event-id']).toBe(original!.event_id);
    const done = await waitFor(
      'the replay to be delivered',
      async () => {
        const found = (await deliveries()).find((d) => d.id === original!.id);
        return found?.status === 'delivered' && found.attempts.some((a) => a.series === 1) ? found : undefined;
      },
      30_000,
    );
    expect(done.attempts.map((a) => [a.series, a.attempt, a.status_code])).toEqual([
      [0, 1, 200],
      [1, 1, 200],
    ]);
  }, 120_000);

  it('exhausts after the last attempt, then a replay delivers', async () => {
    receiver.respond('/hook', () => ({ status: 500, body: 'down for maintenance' }));
    const contact = await request('POST', '/api/v1/contacts', { headers: idem(), body: { email: 'e2e-fail@example.com' } });
    const contactId = (contact.body.data as { _id: string })._id;
    const exhausted = await waitFor(
      'the delivery to be exhausted',
      async () => {
        const found = (await deliveries()).find((d) => d.status === 'exhausted');
        return found;
      },
      60_000,
    );
    expect(exhausted.attempts.filter((a) => a.series === 0)).toHaveLength(3);
    expect(exhausted.attempts.every((a) => a.status_code === 500)).toBe(true);

    receiver.respond('/hook', () => ({ status: 204 }));
    const replay = await request('POST', `/api/v1/webhooks/deliveries/${exhausted.id}/replay`, { headers: idem() });
    expect(replay.status, JSON.stringify(replay.body)).toBe(202);
    const delivered = await waitFor(
      'the replay to be delivered',
      async () => {
        const found = (await deliveries()).find((d) => d.id === exhausted.id);
        return found?.status === 'delivered' ? found : undefined;
      },
      30_000,
    );
    expect(delivered.replay_count).toBe(1);
    const bodies = receiver.requests('/hook').map((r) => JSON.parse(r.body) as { data: { contact: { _id: string } } });
    expect(bodies.filter((b) => b.data.contact._id === contactId)).toHaveLength(4);
  }, 180_000);

  it('rotates the signing secret: both secrets verify during the overlap, only the new one after a rotation without overlap', async () => {
    const [endpoint] = (await request('GET', '/api/v1/webhooks')).body.data as { id: string }[];
    const verifies = (received: { body: string; headers: Record<string, unknown> }, key: string) => {
      try {
        new Stripe('sk_test_unused').webhooks.constructEvent(received.body, received.headers['herald-signature'] as string, key);
        new Webhook(key.slice('whsec_'.length)).verify(received.body, {
          'webhook-id': received.headers['webhook-id'] as string,
          'webhook-timestamp': received.headers['webhook-timestamp'] as string,
          'webhook-signature': received.headers['webhook-signature'] as string,
        });
        return true;
      } catch {
        return false;
      }
    };
    /** Changes contacts until one's event arrives signed with `key` (a running drain reads a rotation within its 5 s tick). */
    const deliveredWith = (key: string, tag: string) =>
      waitFor(
        `an event signed with the ${tag} secret`,
        async () => {
          const contact = await request('POST', '/api/v1/contacts', {
            headers: idem(),
            body: { email: `rotation-${tag}-${Date.now()}@example.com` },
          });
          const id = (contact.body.data as { _id: string })._id;
          const received = await waitFor(
            'its delivery',
            () => Promise.resolve(receiver.requests('/hook').find((r) => r.body.includes(id))),
            30_000,
          );
          return verifies(received, key) ? received : undefined;
        },
        60_000,
      );

    const rotated = await request('POST', `/api/v1/webhooks/${endpoint!.id}/rotate-secret`, {
      headers: idem(),
      body: { overlap_seconds: 3600 },
    });
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    const next = (rotated.body.data as { secret: string; previous_secret_expires_at: string }).secret;
    expect(next).not.toBe(secret);
    expect(Date.parse((rotated.body.data as { previous_secret_expires_at: string }).previous_secret_expires_at)).toBeGreaterThan(
      Date.now() + 3500_000,
    );
    const during = await deliveredWith(next, 'new');
    expect(verifies(during, secret)).toBe(true);

    const again = await request('POST', `/api/v1/webhooks/${endpoint!.id}/rotate-secret`, {
      headers: idem(),
      body: { overlap_seconds: 0 },
    });
    expect(again.body.data).toMatchObject({ previous_secret_expires_at: null });
    const newest = (again.body.data as { secret: string }).secret;
    const after = await deliveredWith(newest, 'newest');
    expect(verifies(after, next)).toBe(false);
    expect(verifies(after, secret)).toBe(false);
    expect((after.headers['webhook-signature'] as string).split(' ')).toHaveLength(1);
  }, 180_000);
});
