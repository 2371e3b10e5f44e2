import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { Event, WebhookAttempt, WebhookDelivery, WebhookEndpoint, type WebhookDeliveryStatus } from '../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { encryptSecret } from '../../src/crypto/secret-box.ts';
import { freePort } from '../../src/dev/ports.ts';
import { waitFor, type Service } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import type { EventType } from '../../src/modules/events/events.schemas.ts';
import { recordEvent } from '../../src/modules/events/events.fns.ts';
import { webhookEndpointActorContract } from '../../workflows/webhook-endpoint.ts';
import { wakeActors } from '../../src/temporal/actor-wake.ts';
import { createWebhookFanOut } from '../../src/modules/webhooks/webhook-fan-out.ts';
import { createWebhookReconciler } from '../../src/modules/webhooks/webhook-reconciler.ts';
import { startLoops } from '../../src/queue/background-loop.ts';
import { startQueueWakes } from '../../src/queue/wakes.ts';
import { verifyHeraldSignature } from '../../src/modules/webhooks/signing.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { createOrg, unique } from '../support/factories.ts';
import { withManualReconciler } from '../support/reconciler.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';
import { startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { spawnWorkerProcess } from '../support/worker-process.ts';
import { WEBHOOK_ENDPOINT_WORKFLOW, webhookEndpointWorkflowId } from '../../workflows/webhook-endpoint.ts';

const SCHEDULE = '0s,200ms,200ms,200ms';
const ATTEMPTS = 4;
const logger = createLogger('warn');
const stripe = new Stripe('sk_test_unused');

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

async function createEndpoint(stack: TestStack, orgId: string, url: string, options: { events?: string[]; enabled?: boolean } = {}) {
  const secret = newSecret();
  const em = scopeToOrg(stack.orm.em, orgId);
  const endpoint = em.create(WebhookEndpoint, {
    orgId,
    name: unique('hook'),
    url,
    description: '',
    events: options.events ?? ['*'],
    enabled: options.enabled ?? true,
    secretEncrypted: encryptSecret(stack.config.encryptionKey!, secret),
    keyMode: 'test',
    disabledReason: null,
    disabledAt: null,
  });
  await em.flush();
  return { endpoint, secret };
}

/** Records one event in its own transaction, as a feature does with its change. */
async function emit(
  stack: TestStack,
  orgId: string,
  type: EventType = 'contact.created',
  data: Record<string, unknown> = {},
): Promise<Event> {
  return scopeToOrg(stack.orm.em, orgId).transactional((em) =>
    Promise.resolve(recordEvent(em, orgId, type, { contact: { _id: unique('c'), email: 'ada@example.com' }, ...data })),
  );
}

async function findDelivery(stack: TestStack, eventId: string, webhookId: string) {
  return stack.orm.em.fork().findOne(WebhookDelivery, { eventId, webhookId }, ALL_TENANTS);
}

async function waitForDelivery(
  stack: TestStack,
  eventId: string,
  webhookId: string,
  statuses: WebhookDeliveryStatus[],
  timeoutMs = 30_000,
) {
  return waitFor(
    `delivery of ${eventId} to ${webhookId} to be ${statuses.join('|')}`,
    async () => {
      const delivery = await findDelivery(stack, eventId, webhookId);
      return delivery && statuses.includes(delivery.status) ? delivery : undefined;
    },
    timeoutMs,
    50,
  );
}

async function attemptsOf(stack: TestStack, deliveryId: string) {
  return stack.orm.em.fork().find(WebhookAttempt, { deliveryId }, { ...ALL_TENANTS, orderBy: { series: 'asc', attemptNumber: 'asc' } });
}

/** The checks a receiver makes: both signature schemes over the raw body, and the headers. */
function expectSigned(request: ReceivedRequest, secret: string, ids: { eventId: string; deliveryId: string; type: string }) {
  const event = stripe.webhooks.constructEvent(request.body, request.headers['herald-signature'] as string, secret);
  expect(event).toMatchObject({ id: ids.eventId, object: 'event', type: ids.type });
  const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]));
  expect(new Webhook(secret).verify(request.body, headers)).toMatchObject({ id: ids.eventId });
  expect(verifyHeraldSignature(request.body, request.headers['herald-signature'] as string, secret)).toBe(
    Number(request.headers['webhook-timestamp']),
  );
  expect(request.headers).toMatchObject({
    'content-type': 'application/json',
    'user-agent': 'Herald-Webhooks/1.0',
    'herald-event-id': ids.eventId,
    'herald-delivery-id': ids.deliveryId,
    'herald-event-type': ids.type,
    'webhook-id': ids.deliveryId,
  });
}

describe('webhook delivery through the real worker and a receiver on 127.0.0.1', () => {
  let stack: TestStack;
  let worker: RunningWorker;
  let temporal: TemporalClientHandle;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    installTemporalLogging(logger);
    receiver = await startWebhookReceiver();
    stack = await createTestStack({ WEBHOOK_RETRY_SCHEDULE: SCHEDULE });
    temporal = await connectTemporalClient(stack.config);
    worker = await startWorker(stack.config, logger);
  });

  afterAll(async () => {
    receiver?.releaseHanging();
    await worker?.shutdown();
    await temporal?.close();
    await receiver?.close();
    await stack?.close();
  });

  it('delivers a subscribed event once, signed for stripe and standardwebhooks, and records the attempt', async () => {
    const orgId = (await createOrg(stack.orm)).org.id;
    const { endpoint, secret } = await createEndpoint(stack, orgId, receiver.url('/delivered'), {
      events: ['contact.created', 'email.sent'],
    });
    const other = await createEndpoint(stack, orgId, receiver.url('/other-type'), { events: ['email.bounced'] });
    const disabled = await createEndpoint(stack, orgId, receiver.url('/disabled'), { enabled: false });
    const event = await emit(stack, orgId, 'contact.created', { note: 'héllo ✓' });

    const delivery = await waitForDelivery(stack, event.id, endpoint.id, ['delivered']);
    const [request] = await receiver.waitForRequests('/delivered', 1);
    expectSigned(request!, secret, { eventId: event.id, deliveryId: delivery.id, type: 'contact.created' });
    expect(JSON.parse(request!.body)).toEqual({
      id: event.id,
      object: 'event',
      type: 'contact.created',
      created_at: event.createdAt.toISOString(),
      api_version: '1.0.0',
      data: event.data,
    });
    expect(delivery).toMatchObject({
      orgId,
      eventType: 'contact.created',
      attemptCount: 1,
      replayCount: 0,
      nextAttemptAt: null,
      lastResponseStatus: 200,
      lastResponseExcerpt: 'ok',
      lastError: null,
    });
    const attempts = await attemptsOf(stack, delivery.id);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ series: 0, attemptNumber: 1, statusCode: 200, error: null, responseExcerpt: 'ok' });
    expect(attempts[0]!.latencyMs).toBeGreaterThanOrEqual(0);

    // Not subscribed to the type, or disabled: no delivery at all.
    await waitFor(
      'the event to be fanned out',
      async () => ((await stack.orm.em.fork().findOneOrFail(Event, { id: event.id }, ALL_TENANTS)).fannedOutAt ? true : undefined),
      10_000,
    );
    expect(await findDelivery(stack, event.id, other.endpoint.id)).toBeNull();
    expect(await findDelivery(stack, event.id, disabled.endpoint.id)).toBeNull();
    expect(receiver.requests('/other-type')).toHaveLength(0);
    expect(receiver.requests('/disabled')).toHaveLength(0);
    expect(receiver.requests('/delivered')).toHaveLength(1);

    // Operators find the endpoint's actor by workspace, kind and queue state, and read its queue.
    const query = `WorkflowId = '${webhookEndpointWorkflowId(endpoint.id)}' AND HeraldOrgId = '${orgId}' AND HeraldKind = 'webhook-endpoint' AND HeraldDeliveryStatus = 'idle'`;
    const runs = await waitFor(
      'the actor to be visible by its search attributes',
      async () => {
        const found = [];
        for await (const run of temporal.client.workflow.list({ query })) found.push(run);
        return found.length > 0 ? found : undefined;
      },
      30_000,
    );
    expect(runs[0]).toMatchObject({ type: WEBHOOK_ENDPOINT_WORKFLOW, taskQueue: stack.config.temporal.taskQueue });
    expect(runs[0]!.memo).toMatchObject({ queue: { state: 'idle', open: 0, lastOutcome: 'HTTP 200' } });
  });

  it('retries a failing receiver on the schedule, re-signing each attempt, until it answers 2xx', async () => {
    const orgId = (await createOrg(stack.orm)).org.id;
    receiver.respond('/flaky', (_request, index) => (index < 2 ? { status: 500, body: `boom ${index}` } : { status: 204, body: '' }));
    const { endpoint, secret } = await createEndpoint(stack, orgId, receiver.url('/flaky'));
    const event = await emit(stack, orgId);

    const delivery = await waitForDelivery(stack, event.id, endpoint.id, ['delivered']);
    const requests = receiver.requests('/flaky');
    expect(requests).toHaveLength(3);
    for (const request of requests) expectSigned(request, secret, { eventId: event.id, deliveryId: delivery.id, type: 'contact.created' });
    // Same body every time; the gaps follow the 200 ms schedule (±20 %).
    expect(new Set(requests.map((r) => r.body)).size).toBe(1);
    for (let i = 1; i < requests.length; i += 1) expect(requests[i]!.at - requests[i - 1]!.at).toBeGreaterThanOrEqual(150);

    expect(delivery).toMatchObject({ attemptCount: 3, lastResponseStatus: 204, lastError: null, nextAttemptAt: null });
    expect((await attemptsOf(stack, delivery.id)).map((a) => [a.attemptNumber, a.statusCode, a.error, a.responseExcerpt])).toEqual([
      [1, 500, 'the receiver answered HTTP 500', 'boom 0'],
      [2, 500, 'the receiver answered HTTP 500', 'boom 1'],
      [3, 204, null, null],
    ]);
  });

  it('shows failed with next_attempt_at while a retry is scheduled, and exhausted after the last attempt', async () => {
    const orgId = (await createOrg(stack.orm)).org.id;
    receiver.respond('/down', () => ({ status: 503, body: 'x'.repeat(5000) }));
    const { endpoint } = await createEndpoint(stack, orgId, receiver.url('/down'));
    const event = await emit(stack, orgId);

    const failed = await waitForDelivery(stack, event.id, endpoint.id, ['failed', 'exhausted']);
    if (failed.status === 'failed') expect(failed.nextAttemptAt).toBeInstanceOf(Date);
    const delivery = await waitForDelivery(stack, event.id, endpoint.id, ['exhausted']);
    expect(delivery).toMatchObject({
      attemptCount: ATTEMPTS,
      nextAttemptAt: null,
      lastResponseStatus: 503,
      lastError: 'the receiver answered HTTP 503',
    });
    expect(delivery.lastResponseExcerpt).toBe('x'.repeat(1024));
    const attempts = await attemptsOf(stack, delivery.id);
    expect(attempts.map((a) => a.attemptNumber)).toEqual([1, 2, 3, 4]);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(receiver.requests('/down')).toHaveLength(ATTEMPTS);
  });

  it('stops at 410 Gone and disables the endpoint, saying why', async () => {
    const orgId = (await createOrg(stack.orm)).org.id;
    receiver.respond('/gone', () => ({ status: 410, body: 'unsubscribed' }));
    const { endpoint } = await createEndpoint(stack, orgId, receiver.url('/gone'));
    const event = await emit(stack, orgId);

    const delivery = await waitForDelivery(stack, event.id, endpoint.id, ['exhausted']);
    expect(delivery).toMatchObject({ attemptCount: 1, lastResponseStatus: 410, nextAttemptAt: null });
    expect(delivery.lastError).toMatch(/410 Gone.*disabled/);
    const stored = await stack.orm.em.fork().findOneOrFail(WebhookEndpoint, { id: endpoint.id }, ALL_TENANTS);
    expect(stored.enabled).toBe(false);
    expect(stored.disabledAt).toBeInstanceOf(Date);
    expect(stored.disabledReason).toContain(`410 Gone to delivery ${delivery.id}`);

    const later = await emit(stack, orgId);
    await waitFor(
      'the later event to be fanned out',
      async () => ((await stack.orm.em.fork().findOneOrFail(Event, { id: later.id }, ALL_TENANTS)).fannedOutAt ? true : undefined),
      10_000,
    );
    expect(await findDelivery(stack, later.id, endpoint.id)).toBeNull();
    expect(receiver.requests('/gone')).toHaveLength(1);
  });

  it('honours Retry-After on 429 (the next attempt waits the given second, not the 200 ms schedule)', async () => {
    const orgId = (await createOrg(stack.orm)).org.id;
    receiver.respond('/throttled', (_request, index) => (index === 0 ? { status: 429, headers: { 'retry-after': '1' } } : {}));
    const { endpoint } = await createEndpoint(stack, orgId, receiver.url('/throttled'));
    const event = await emit(stack, orgId);

    await waitForDelivery(stack, event.id, endpoint.id, ['delivered']);
    const [first, second] = receiver.requests('/throttled');
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1000);
    expect(second!.at - first!.at).toBeLessThan(5000);
  });

  it('does not follow redirects: a 3xx is a failed attempt and the Location is never requested', async () => {
    const orgId = (await createOrg(stack.orm)).org.id;
    receiver.respond('/moved', () => ({ status: 302, headers: { location: receiver.url('/elsewhere') } }));
    const { endpoint } = await createEndpoint(stack, orgId, receiver.url('/moved'));
    const event = await emit(stack, orgId);

    const delivery = await waitForDelivery(stack, event.id, endpoint.id, ['exhausted']);
    expect(delivery.lastResponseStatus).toBe(302);
    expect(delivery.lastError).toMatch(/^redirect \(302 to http:\/\/127\.0\.0\.1:\d+\/elsewhere\) not followed/);
    expect(receiver.requests('/moved')).toHaveLength(ATTEMPTS);
    expect(receiver.requests('/elsewhere')).toHaveLength(0);
  });

  it('records network errors: connection refused', async () => {
    const orgId = (await createOrg(stack.orm)).org.id;
    const closed = await freePort();
    const { endpoint } = await createEndpoint(stack, orgId, `http://127.0.0.1:${closed}/nobody`);
    const event = await emit(stack, orgId);
    const delivery = await waitForDelivery(stack, event.id, endpoint.id, ['exhausted']);
    expect(delivery).toMatchObject({ lastResponseStatus: null, attemptCount: ATTEMPTS });
    expect(delivery.lastError).toMatch(/^connection refused/);
    expect((await attemptsOf(stack, delivery.id)).every((a) => a.statusCode === null && /connection refused/.test(a.error ?? ''))).toBe(
      true,
    );
  });

  it('replays a delivered and an exhausted delivery as new series: same delivery and event ids, attempts numbered afresh', async () => {
    const orgId = (await createOrg(stack.orm)).org.id;
    let healthy = false;
    receiver.respond('/replay', () => (healthy ? {} : { status: 500 }));
    const { endpoint, secret } = await createEndpoint(stack, orgId, receiver.url('/replay'));
    const event = await emit(stack, orgId);
    const exhausted = await waitForDelivery(stack, event.id, endpoint.id, ['exhausted']);
    healthy = true;

    // What the replay route does: back to queued under the next series, due now, then wake the endpoint's actor.
    for (const series of [1, 2]) {
      await stack.orm.em
        .fork()
        .nativeUpdate(
          WebhookDelivery,
          { id: exhausted.id },
          { status: 'queued', replayCount: series, seriesAttempts: 0, nextAttemptAt: new Date() },
          ALL_TENANTS,
        );
      await wakeActors(temporal.client, stack.config, webhookEndpointActorContract, [{ orgId, endpointId: endpoint.id }]);
      await waitFor(
        `series ${series} to be delivered`,
        async () => {
          const row = await findDelivery(stack, event.id, endpoint.id);
          return row?.status === 'delivered' && row.replayCount === series ? row : undefined;
        },
        30_000,
        50,
      );
    }
    const attempts = await attemptsOf(stack, exhausted.id);
    expect(attempts.map((a) => [a.series, a.attemptNumber, a.statusCode])).toEqual([
      [0, 1, 500],
      [0, 2, 500],
      [0, 3, 500],
      [0, 4, 500],
      [1, 1, 200],
      [2, 1, 200],
    ]);
    const requests = receiver.requests('/replay');
    expect(requests).toHaveLength(6);
    for (const request of requests) expectSigned(request, secret, { eventId: event.id, deliveryId: exhausted.id, type: 'contact.created' });
    expect((await findDelivery(stack, event.id, endpoint.id))!.attemptCount).toBe(6);
  });

  it('wakes the actor of an endpoint whose due row got no wake-up (reconciler)', async () => {
    const orgId = (await createOrg(stack.orm)).org.id;
    const { endpoint } = await createEndpoint(stack, orgId, receiver.url('/orphan'));
    const event = await emit(stack, orgId, 'email.sent');
    const first = await waitForDelivery(stack, event.id, endpoint.id, ['delivered']);
    // The actor is gone (terminated by an operator), and a replay's wake-up was lost: queued, series 1, due two minutes ago.
    await temporal.client.workflow.getHandle(webhookEndpointWorkflowId(endpoint.id)).terminate('test: actor lost');
    await stack.orm.em.fork().nativeUpdate(
      WebhookDelivery,
      { id: first.id },
      {
        status: 'queued',
        replayCount: 1,
        seriesAttempts: 0,
        updatedAt: new Date(Date.now() - 120_000),
        nextAttemptAt: new Date(Date.now() - 120_000),
      },
      ALL_TENANTS,
    );
    // The worker's own relay reconciles too; whichever gets there first wakes the actor.
    await withManualReconciler(stack, temporal.client, {}, (reconciler) => reconciler.poke());
    await waitFor(
      'the replay to be delivered',
      async () => {
        const row = await findDelivery(stack, event.id, endpoint.id);
        return row?.status === 'delivered' && row.replayCount === 1 ? row : undefined;
      },
      30_000,
      50,
    );
    expect(receiver.requests('/orphan')).toHaveLength(2);
  });

  it('does not let a hanging endpoint delay a healthy one (per-endpoint concurrency limit)', async () => {
    const orgId = (await createOrg(stack.orm)).org.id;
    receiver.respond('/hangs', () => 'hang');
    const slow = await createEndpoint(stack, orgId, receiver.url('/hangs'));
    const fast = await createEndpoint(stack, orgId, receiver.url('/healthy'));
    const limit = stack.config.webhooks.endpointConcurrency;
    const count = limit + 4;
    const events: Event[] = [];
    for (let i = 0; i < count; i += 1) events.push(await emit(stack, orgId, 'contact.updated'));

    const requests = await receiver.waitForRequests('/healthy', count, 20_000);
    for (const event of events) {
      const request = requests.find((r) => r.headers['herald-event-id'] === event.id);
      expect(request, `event ${event.id} reached the healthy endpoint`).toBeDefined();
    }
    // Every healthy delivery arrived while the hanging endpoint still held its requests, and the
    // hanging endpoint never had more than its concurrency limit in flight.
    expect(receiver.requests('/hangs').length).toBeLessThanOrEqual(limit);
    for (const event of events) await waitForDelivery(stack, event.id, fast.endpoint.id, ['delivered'], 5_000);
    // The hanging endpoint holds at most its limit of attempts in flight; the rest wait their turn,
    // queued or claimed ahead by its drain (`delivering`, without a request).
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(receiver.requests('/hangs')).toHaveLength(limit);
    const slowRows = await stack.orm.em.fork().find(WebhookDelivery, { webhookId: slow.endpoint.id }, ALL_TENANTS);
    const delivering = slowRows.filter((r) => r.status === 'delivering').length;
    expect(delivering).toBeGreaterThanOrEqual(limit);
    expect(delivering + slowRows.filter((r) => r.status === 'queued').length).toBe(count);
    receiver.respond('/hangs', () => ({}));
    receiver.releaseHanging(200);
    for (const event of events) await waitForDelivery(stack, event.id, slow.endpoint.id, ['delivered'], 30_000);
  });
});

describe('webhook delivery: private targets refused when WEBHOOK_ALLOW_PRIVATE_TARGETS is off', () => {
  let stack: TestStack;
  let worker: RunningWorker;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    installTemporalLogging(logger);
    receiver = await startWebhookReceiver();
    stack = await createTestStack({ WEBHOOK_RETRY_SCHEDULE: '0s,200ms', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' });
    worker = await startWorker(stack.config, logger);
  });

  afterAll(async () => {
    await worker?.shutdown();
    await receiver?.close();
    await stack?.close();
  });

  it.each([
    ['an IP literal', '127.0.0.1'],
    ['a name resolving to loopback', 'localhost'],
  ])('refuses %s before connecting; the receiver gets nothing', async (_name, host) => {
    const orgId = (await createOrg(stack.orm)).org.id;
    const path = `/private-${host}`;
    const { endpoint } = await createEndpoint(stack, orgId, receiver.url(path, host));
    const event = await emit(stack, orgId);
    const delivery = await waitForDelivery(stack, event.id, endpoint.id, ['exhausted']);
    expect(delivery.lastResponseStatus).toBeNull();
    expect(delivery.lastError).toMatch(new RegExp(`^refused: ${host} resolves to (127\\.0\\.0\\.1|::1), a loopback address`));
    const attempts = await attemptsOf(stack, delivery.id);
    expect(attempts).toHaveLength(2);
    expect(receiver.requests(path)).toHaveLength(0);
  });
});

describe('webhook fan-out while Temporal is unreachable', () => {
  let stack: TestStack;
  let worker: RunningWorker | undefined;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    installTemporalLogging(logger);
    receiver = await startWebhookReceiver();
    stack = await createTestStack({ WEBHOOK_RETRY_SCHEDULE: SCHEDULE });
  });

  afterAll(async () => {
    await worker?.shutdown();
    await receiver?.close();
    await stack?.close();
  });

  it('delivers every event committed during the outage exactly once per subscribed endpoint', async () => {
    const orgId = (await createOrg(stack.orm)).org.id;
    const a = await createEndpoint(stack, orgId, receiver.url('/a'));
    const b = await createEndpoint(stack, orgId, receiver.url('/b'), { events: ['contact.created'] });

    // A relay whose Temporal frontend does not answer: rows are written and committed, no actor can be woken.
    const unreachable = new Client({
      connection: Connection.lazy({ address: `127.0.0.1:${await freePort()}` }),
      namespace: stack.config.temporal.namespace,
    });
    const relayLogger = createLogger('error');
    const wakes = startQueueWakes({ databaseUrl: stack.databaseUrl, logger: relayLogger });
    const relayOptions = { orm: stack.orm, temporal: unreachable, config: stack.config, logger: relayLogger, wakeDeadlineMs: 2_000 };
    const relay = startLoops([createWebhookFanOut({ ...relayOptions, intervalMs: 500 }), createWebhookReconciler(relayOptions)], {
      logger: relayLogger,
      wakes,
    });
    const events: Event[] = [];
    try {
      for (let i = 0; i < 10; i += 1) events.push(await emit(stack, orgId, i % 2 === 0 ? 'contact.created' : 'contact.deleted'));
      await waitFor(
        'the deliveries to be written',
        async () => {
          const rows = await stack.orm.em.fork().count(WebhookDelivery, { orgId }, ALL_TENANTS);
          return rows === 15 ? rows : undefined;
        },
        30_000,
      );
      await new Promise((resolve) => setTimeout(resolve, 1_500));
    } finally {
      await relay.stop();
      await wakes.stop();
      await unreachable.connection.close().catch(() => {});
    }
    const unfanned = await stack.orm.em.fork().count(Event, { orgId, fannedOutAt: null }, ALL_TENANTS);
    expect(unfanned).toBe(0);
    expect(await stack.orm.em.fork().count(WebhookDelivery, { orgId, status: 'queued' }, ALL_TENANTS)).toBe(15);
    expect(receiver.requests()).toHaveLength(0);

    // Temporal is back (a worker with a working client): its reconciler wakes the endpoints, everything goes out.
    worker = await startWorker(stack.config, logger);
    for (const event of events) {
      await waitForDelivery(stack, event.id, a.endpoint.id, ['delivered']);
      if (event.type === 'contact.created') await waitForDelivery(stack, event.id, b.endpoint.id, ['delivered']);
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const perEndpoint = (path: string) =>
      receiver
        .requests(path)
        .map((r) => r.headers['herald-event-id'])
        .sort();
    expect(perEndpoint('/a')).toEqual(events.map((e) => e.id).sort());
    expect(perEndpoint('/b')).toEqual(
      events
        .filter((e) => e.type === 'contact.created')
        .map((e) => e.id)
        .sort(),
    );
    expect(await stack.orm.em.fork().count(Event, { orgId, fannedOutAt: null }, ALL_TENANTS)).toBe(0);
    expect(await stack.orm.em.fork().count(WebhookDelivery, { orgId }, ALL_TENANTS)).toBe(15);
  }, 120_000);
});

describe('webhook delivery when the worker process is killed mid-series', () => {
  let stack: TestStack;
  let receiver: WebhookReceiver;
  let service: Service | undefined;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    stack = await createTestStack({ WEBHOOK_RETRY_SCHEDULE: '0s,2s,2s,2s,2s,2s' });
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
    await stack?.close();
  });

  it('neither loses nor duplicates attempts: the series resumes after a restart', async () => {
    const orgId = (await createOrg(stack.orm)).org.id;
    receiver.respond('/killed', (_request, index) => (index < 3 ? { status: 500 } : {}));
    const { endpoint, secret } = await createEndpoint(stack, orgId, receiver.url('/killed'));

    service = await spawnWorkerProcess(stack);
    const event = await emit(stack, orgId);
    await receiver.waitForRequests('/killed', 1, 30_000);
    const first = await waitFor(
      'attempt 1 to be recorded',
      async () => {
        const row = await findDelivery(stack, event.id, endpoint.id);
        return row && row.attemptCount >= 1 ? row : undefined;
      },
      10_000,
      20,
    );
    service.child.kill('SIGKILL');
    await service.exited;
    service = undefined;
    const requestsAtKill = receiver.requests('/killed').length;

    // The retry timer fires with no worker alive; nothing is sent meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(receiver.requests('/killed')).toHaveLength(requestsAtKill);

    service = await spawnWorkerProcess(stack);
    const delivery = await waitForDelivery(stack, event.id, endpoint.id, ['delivered'], 60_000);
    const attempts = await attemptsOf(stack, first.id);
    expect(attempts.map((a) => a.attemptNumber)).toEqual([1, 2, 3, 4]);
    expect(attempts.map((a) => a.statusCode)).toEqual([500, 500, 500, 200]);
    expect(delivery.attemptCount).toBe(4);
    const requests = receiver.requests('/killed');
    // At least once: every recorded attempt was sent; at most the attempt in flight at the kill is sent twice.
    expect(requests.length).toBeGreaterThanOrEqual(4);
    expect(requests.length).toBeLessThanOrEqual(5);
    for (const request of requests) expectSigned(request, secret, { eventId: event.id, deliveryId: delivery.id, type: 'contact.created' });
  }, 240_000);
});
