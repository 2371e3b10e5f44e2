import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { WebhookAttempt, WebhookDelivery, WebhookEndpoint, type Event, type WebhookDeliveryStatus } from '../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { encryptSecret } from '../../src/crypto/secret-box.ts';
import { waitFor, type Service } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { recordEvent } from '../../src/modules/events/events.fns.ts';
import { ABANDONED_ERROR } from '../../src/modules/webhooks/delivery-engine.ts';
import { webhookEndpointWorkflowId } from '../../workflows/webhook-endpoint.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { createOrg, unique } from '../support/factories.ts';
import { withManualReconciler } from '../support/reconciler.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';
import { startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { spawnWorkerProcess } from '../support/worker-process.ts';

/**
 * Crash robustness of webhook delivery on the real stack: a `herald worker` process killed while
 * it waits for the receiver's answer, and deliveries whose endpoint actor is gone (terminated by
 * an operator, lost with the Temporal server's state) finished once the webhook reconciler wakes it.
 */

const logger = createLogger('warn');
const stripe = new Stripe('sk_test_unused');

async function createEndpoint(stack: TestStack, orgId: string, url: string) {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const em = scopeToOrg(stack.orm.em, orgId);
  const endpoint = em.create(WebhookEndpoint, {
    orgId,
    name: unique('hook'),
    url,
    description: '',
    events: ['*'],
    enabled: true,
    secretEncrypted: encryptSecret(stack.config.encryptionKey!, secret),
    keyMode: 'test',
    disabledReason: null,
    disabledAt: null,
  });
  await em.flush();
  return { endpoint, secret };
}

function emit(stack: TestStack, orgId: string): Promise<Event> {
  return scopeToOrg(stack.orm.em, orgId).transactional((em) =>
    Promise.resolve(recordEvent(em, orgId, 'contact.created', { contact: { _id: unique('c'), email: 'ada@example.com' } })),
  );
}

function waitForDelivery(stack: TestStack, eventId: string, webhookId: string, statuses: WebhookDeliveryStatus[], timeoutMs = 30_000) {
  return waitFor(
    `delivery of ${eventId} to be ${statuses.join('|')}`,
    async () => {
      const delivery = await stack.orm.em.fork().findOne(WebhookDelivery, { eventId, webhookId }, ALL_TENANTS);
      return delivery && statuses.includes(delivery.status) ? delivery : undefined;
    },
    timeoutMs,
    25,
  );
}

async function attemptsOf(stack: TestStack, deliveryId: string) {
  const attempts = await stack.orm.em
    .fork()
    .find(WebhookAttempt, { deliveryId }, { ...ALL_TENANTS, orderBy: { series: 'asc', attemptNumber: 'asc' } });
  return attempts.map((a) => [a.attemptNumber, a.statusCode, a.error]);
}

/** What a receiver that dedupes checks: both signatures verify, and every copy names the same delivery. */
function expectSameDelivery(requests: ReceivedRequest[], secret: string, delivery: WebhookDelivery) {
  for (const request of requests) {
    expect(stripe.webhooks.constructEvent(request.body, request.headers['herald-signature'] as string, secret)).toMatchObject({
      id: delivery.eventId,
    });
    const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]));
    expect(new Webhook(secret).verify(request.body, headers)).toMatchObject({ id: delivery.eventId });
    expect(request.headers).toMatchObject({
      'herald-delivery-id': delivery.id,
      'webhook-id': delivery.id,
      'herald-event-id': delivery.eventId,
    });
  }
  expect(new Set(requests.map((r) => r.body)).size).toBe(1);
}

async function countStatus(stack: TestStack, orgId: string, status: WebhookDeliveryStatus) {
  return stack.orm.em.fork().count(WebhookDelivery, { orgId, status }, ALL_TENANTS);
}

describe('webhook delivery when the worker process is killed during an HTTP attempt', () => {
  let stack: TestStack;
  let receiver: WebhookReceiver;
  let temporal: TemporalClientHandle;
  let service: Service | undefined;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    stack = await createTestStack({ WEBHOOK_RETRY_SCHEDULE: '0s,200ms,200ms,200ms' });
    temporal = await connectTemporalClient(stack.config);
  });

  afterAll(async () => {
    receiver?.releaseHanging();
    await service?.stop();
    await temporal?.close();
    await receiver?.close();
    await stack?.close();
  });

  /** Starts a worker process, emits an event to `path` (whose first request hangs) and kills the worker while it waits. */
  async function killDuringFirstAttempt(path: string) {
    const orgId = (await createOrg(stack.orm)).org.id;
    receiver.respond(path, (_request, index) => (index === 0 ? 'hang' : {}));
    const { endpoint, secret } = await createEndpoint(stack, orgId, receiver.url(path));
    service ??= await spawnWorkerProcess(stack);
    const event = await emit(stack, orgId);
    await receiver.waitForRequests(path, 1, 30_000);
    const inFlight = await waitForDelivery(stack, event.id, endpoint.id, ['delivering'], 10_000);
    service.child.kill('SIGKILL');
    await service.exited;
    service = undefined;
    receiver.releaseHanging();
    // The answer never reached Herald: the row still says delivering, nothing is recorded.
    expect((await waitForDelivery(stack, event.id, endpoint.id, ['delivering'])).attemptCount).toBe(0);
    expect(await attemptsOf(stack, inFlight.id)).toEqual([]);
    return { orgId, endpoint, secret, event, deliveryId: inFlight.id };
  }

  /** The attempts of a delivery whose first attempt was cut off, and what the receiver saw. */
  async function expectAbandonedThenDelivered(input: { path: string; orgId: string; secret: string; delivery: WebhookDelivery }) {
    expect(await attemptsOf(stack, input.delivery.id)).toEqual([
      [1, null, ABANDONED_ERROR],
      [2, 200, null],
    ]);
    // At least once: the receiver saw the request twice, both copies the same delivery.
    const requests = receiver.requests(input.path);
    expect(requests).toHaveLength(2);
    expectSameDelivery(requests, input.secret, input.delivery);
    expect(await countStatus(stack, input.orgId, 'delivering')).toBe(0);
  }

  it('records the interrupted attempt as abandoned and delivers on the next one, with the same delivery id for the receiver to dedupe', async () => {
    const path = '/killed-mid-request';
    const { orgId, endpoint, secret, event, deliveryId } = await killDuringFirstAttempt(path);

    service = await spawnWorkerProcess(stack);
    const delivery = await waitForDelivery(stack, event.id, endpoint.id, ['delivered'], 90_000);
    expect(delivery).toMatchObject({ id: deliveryId, attemptCount: 2, lastResponseStatus: 200, lastError: null, nextAttemptAt: null });
    await expectAbandonedThenDelivered({ path, orgId, secret, delivery });
  }, 180_000);

  it('finishes a delivery left delivering whose worker died and whose actor was terminated (reconciler)', async () => {
    const path = '/killed-and-terminated';
    const { orgId, endpoint, secret, event, deliveryId } = await killDuringFirstAttempt(path);
    // The operator terminates the actor (or the Temporal server lost it): no worker will resume it.
    await temporal.client.workflow.getHandle(webhookEndpointWorkflowId(endpoint.id)).terminate('test: workflow lost');
    service = await spawnWorkerProcess(stack);
    expect((await waitForDelivery(stack, event.id, endpoint.id, ['delivering'])).attemptCount).toBe(0);

    // While the dead drain's leases hold, nothing counts as stranded; once they lapse (moved into
    // the past here rather than waited for), the reconciler wakes the endpoint.
    await withManualReconciler(stack, temporal.client, { afterMs: 0 }, async (reconciler) => {
      expect(await reconciler.poke()).toBe(0);
      const past = new Date(Date.now() - 1_000);
      await stack.orm.em.fork().nativeUpdate(WebhookDelivery, { id: deliveryId }, { leaseUntil: past }, ALL_TENANTS);
      await stack.orm.em.fork().nativeUpdate(WebhookEndpoint, { id: endpoint.id }, { drainLeaseUntil: past }, ALL_TENANTS);
      expect(await reconciler.poke()).toBe(1);
    });
    const delivery = await waitForDelivery(stack, event.id, endpoint.id, ['delivered']);
    await expectAbandonedThenDelivered({ path, orgId, secret, delivery });
  }, 180_000);
});

describe('webhook reconciler: failed and queued deliveries', () => {
  const RETRY_MS = 3_000;
  let stack: TestStack;
  let worker: RunningWorker;
  let temporal: TemporalClientHandle;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    installTemporalLogging(logger);
    receiver = await startWebhookReceiver();
    stack = await createTestStack({ WEBHOOK_RETRY_SCHEDULE: `0s,${RETRY_MS}ms,${RETRY_MS}ms` });
    temporal = await connectTemporalClient(stack.config);
    worker = await startWorker(stack.config, logger);
  });

  afterAll(async () => {
    await worker?.shutdown();
    await temporal?.close();
    await receiver?.close();
    await stack?.close();
  });

  it('wakes a lost actor once a retry is overdue, continuing from the recorded attempts', async () => {
    const path = '/terminated';
    const orgId = (await createOrg(stack.orm)).org.id;
    receiver.respond(path, (_request, index) => (index === 0 ? { status: 500, body: 'first fails' } : {}));
    const { endpoint, secret } = await createEndpoint(stack, orgId, receiver.url(path));
    const event = await emit(stack, orgId);
    const failed = await waitForDelivery(stack, event.id, endpoint.id, ['failed']);
    const handle = temporal.client.workflow.getHandle(webhookEndpointWorkflowId(endpoint.id));

    await withManualReconciler(stack, temporal.client, { afterMs: 200 }, async (reconciler) => {
      // The retry is not yet overdue: nothing to reconcile.
      expect(await reconciler.poke()).toBe(0);
      await handle.terminate('test: operator terminated the actor');
      expect((await handle.describe()).status.name).toBe('TERMINATED');
      // The terminated drain's lease lapses as a killed one's would.
      await stack.orm.em.fork().nativeUpdate(WebhookEndpoint, { id: endpoint.id }, { drainLeaseUntil: null }, ALL_TENANTS);

      // The retry falls due with no actor to make it: nothing is sent, the row stays failed.
      const overdue = failed.nextAttemptAt!.getTime() + 400 - Date.now();
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, overdue)));
      expect(receiver.requests(path)).toHaveLength(1);
      expect((await waitForDelivery(stack, event.id, endpoint.id, ['failed'])).attemptCount).toBe(1);

      expect(await reconciler.poke()).toBe(1);
    });
    const delivery = await waitForDelivery(stack, event.id, endpoint.id, ['delivered']);
    expect(delivery).toMatchObject({ attemptCount: 2, lastResponseStatus: 200, lastError: null });
    // Attempt 1 stays on record; the woken actor made attempt 2.
    expect(await attemptsOf(stack, failed.id)).toEqual([
      [1, 500, 'the receiver answered HTTP 500'],
      [2, 200, null],
    ]);
    const requests = receiver.requests(path);
    expect(requests).toHaveLength(2);
    expectSameDelivery(requests, secret, delivery);
    expect((await handle.describe()).status.name).toBe('RUNNING');
  }, 120_000);

  it('leaves an actor waiting for a future retry alone, and wakes an endpoint whose due row got no wake-up', async () => {
    const orgId = (await createOrg(stack.orm)).org.id;
    // A: failed, its actor alive and sleeping out an hour-long Retry-After.
    receiver.respond('/waiting', () => ({ status: 503, headers: { 'retry-after': '3600' } }));
    const waiting = await createEndpoint(stack, orgId, receiver.url('/waiting'));
    const eventA = await emit(stack, orgId);
    await waitForDelivery(stack, eventA.id, waiting.endpoint.id, ['failed']);
    const handleA = temporal.client.workflow.getHandle(webhookEndpointWorkflowId(waiting.endpoint.id));
    const runA = (await handleA.describe()).runId;
    // B (another workspace): delivered, then queued for a replay (series 1) whose wake-up was lost.
    const otherOrgId = (await createOrg(stack.orm)).org.id;
    const orphan = await createEndpoint(stack, otherOrgId, receiver.url('/orphan'));
    const eventB = await emit(stack, otherOrgId);
    const b = await waitForDelivery(stack, eventB.id, orphan.endpoint.id, ['delivered']);
    await waitFor(
      "B's drain to return",
      async () => {
        const row = await stack.orm.em.fork().findOne(WebhookEndpoint, { id: orphan.endpoint.id }, ALL_TENANTS);
        return row && row.drainLeaseUntil === null ? row : undefined;
      },
      30_000,
      50,
    );
    const em = stack.orm.em.fork();
    await em.nativeUpdate(
      WebhookDelivery,
      { id: b.id },
      { status: 'queued', replayCount: 1, seriesAttempts: 0, nextAttemptAt: new Date(Date.now() - 10_000) },
      ALL_TENANTS,
    );

    await withManualReconciler(stack, temporal.client, { afterMs: 0 }, async (reconciler) => {
      expect(await reconciler.poke()).toBe(1); // B only: A's row is not due for an hour
    });
    await waitFor(
      'the replay of B to be delivered',
      async () => {
        const row = await stack.orm.em.fork().findOne(WebhookDelivery, { id: b.id }, ALL_TENANTS);
        return row?.status === 'delivered' && row.replayCount === 1 ? row : undefined;
      },
      30_000,
      25,
    );
    expect(receiver.requests('/orphan')).toHaveLength(2);
    // A's actor was left as it was: the same run, still waiting, one request so far.
    const described = await handleA.describe();
    expect(described.status.name).toBe('RUNNING');
    expect(described.runId).toBe(runA);
    expect(receiver.requests('/waiting')).toHaveLength(1);
    await handleA.terminate('test done');
  }, 120_000);
});
