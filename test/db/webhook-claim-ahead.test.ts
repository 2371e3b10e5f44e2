import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookAttempt, WebhookDelivery, WebhookEndpoint } from '../../db/entities/index.ts';
import { newId } from '../../db/ids.ts';
import { ALL_TENANTS } from '../../db/orm.ts';
import { createEndpointDrainer } from '../../src/modules/webhooks/endpoint-drain.ts';
import { createEndpointQueue } from '../../src/modules/webhooks/endpoint-queue.repo.ts';
import { ENDPOINT_DELETED_ERROR } from '../../src/modules/webhooks/webhook-endpoint.fns.ts';
import type { QueueWakes } from '../../src/queue/wakes.ts';
import { createOrg } from '../support/factories.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { insertDelivery, insertEndpoint, insertSigningEndpoint } from '../support/webhook-rows.ts';

/**
 * The endpoint drain's claims ahead of its window (src/modules/webhooks/claim-ahead.ts) and the
 * worker's one group commit of attempt records, on the real database and a receiver on 127.0.0.1.
 */

let stack: TestStack;
let receiver: WebhookReceiver;
let orgId: string;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  stack = await createTestStack({ WEBHOOK_ENDPOINT_CONCURRENCY: '1', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', QUEUE_DRAIN_LINGER_MS: '0' });
  orgId = (await createOrg(stack.orm)).org.id;
});
afterAll(async () => {
  receiver?.releaseHanging(200);
  await stack?.close();
  await receiver?.close();
});

const noWakes: QueueWakes = { subscribe: () => () => {}, subscribeChannel: () => () => {}, stop: () => Promise.resolve() };

/** `count` deliveries to the endpoint, queued and due now. */
async function dueDeliveries(webhookId: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) ids.push((await insertDelivery(stack.orm, orgId, { webhookId, status: 'queued' })).id);
  await stack.orm.em.getConnection().execute(`update webhook_deliveries set next_attempt_at = now() where id in (?)`, [ids], 'run');
  return ids;
}

const deliveriesOf = (webhookId: string) =>
  stack.orm.em.fork().find(WebhookDelivery, { webhookId }, { ...ALL_TENANTS, orderBy: { id: 'asc' } });

describe('webhook endpoint drain: rows claimed ahead of the window', () => {
  it('claims ahead once rows flow, sends one at a time at concurrency 1, and puts the rows it never sent back in the queue when cancelled', async () => {
    // The first request is answered (the claim of one row was filled: rows flow), the second hangs.
    receiver.respond('/slow', (_request, index) => (index === 0 ? {} : 'hang'));
    const { endpoint } = await insertSigningEndpoint(stack.orm, stack.config.encryptionKey!, orgId, receiver.url('/slow'));
    const ids = await dueDeliveries(endpoint.id, 5);
    const drainer = createEndpointDrainer({ orm: stack.orm, config: stack.config, wakes: noWakes, http: { timeoutMs: 500 } });
    const controller = new AbortController();
    const drained = drainer.drain({ orgId, endpointId: endpoint.id }, { heartbeat: () => {}, signal: controller.signal });
    const [first, second] = await receiver.waitForRequests('/slow', 2, 10_000);
    const claimed = await deliveriesOf(endpoint.id);
    const rest = ids.filter((id) => id !== first!.headers['herald-delivery-id']);
    expect(claimed.filter((d) => rest.includes(d.id)).map((d) => d.status)).toEqual(rest.map(() => 'delivering'));
    controller.abort();
    await drained;

    expect(receiver.requests('/slow')).toHaveLength(2);
    const rows = await deliveriesOf(endpoint.id);
    const statusOf = (id: unknown) => rows.find((d) => d.id === id)?.status;
    expect([statusOf(first!.headers['herald-delivery-id']), statusOf(second!.headers['herald-delivery-id'])]).toEqual([
      'delivered',
      'failed',
    ]);
    const givenBack = rows.filter((d) => d.attemptCount === 0);
    expect(givenBack.map((d) => [d.status, d.leaseUntil])).toEqual([0, 1, 2].map(() => ['queued', null]));
    for (const row of givenBack) expect(row.nextAttemptAt!.getTime()).toBeLessThanOrEqual(Date.now());
    const attempts = await stack.orm.em.fork().count(WebhookAttempt, { deliveryId: { $in: ids } }, ALL_TENANTS);
    expect(attempts).toBe(2);
  });

  it('ends the rows in line without a request once it sees the endpoint deleted', async () => {
    receiver.respond('/deleted', (_request, index) => (index === 0 ? {} : 'hang'));
    const { endpoint } = await insertSigningEndpoint(stack.orm, stack.config.encryptionKey!, orgId, receiver.url('/deleted'));
    const ids = await dueDeliveries(endpoint.id, 4);
    const drainer = createEndpointDrainer({ orm: stack.orm, config: stack.config, wakes: noWakes, http: { timeoutMs: 1_500 } });
    const drained = drainer.drain({ orgId, endpointId: endpoint.id }, { heartbeat: () => {}, signal: new AbortController().signal });
    await receiver.waitForRequests('/deleted', 2, 10_000);
    await stack.orm.em.getConnection().execute(`delete from webhook_endpoints where id = ?`, [endpoint.id], 'run');
    await drained;

    expect(receiver.requests('/deleted')).toHaveLength(2);
    const sent = new Set(receiver.requests('/deleted').map((r) => r.headers['herald-delivery-id']));
    const rows = await deliveriesOf(endpoint.id);
    expect(rows.map((d) => d.id)).toEqual(ids);
    const inLine = rows.filter((d) => !sent.has(d.id));
    expect(inLine.map((d) => [d.status, d.lastError, d.attemptCount])).toEqual([0, 1].map(() => ['exhausted', ENDPOINT_DELETED_ERROR, 0]));
  });

  it('records the attempts of several endpoints in one statement and disables only the endpoint that answered 410', async () => {
    const gone = await insertEndpoint(stack.orm, orgId);
    const fine = await insertEndpoint(stack.orm, orgId);
    const queue = createEndpointQueue(stack.orm);
    const [goneId] = await dueDeliveries(gone.id, 1);
    const [fineId] = await dueDeliveries(fine.id, 1);
    await queue.claim(orgId, gone.id, 10, 30);
    await queue.claim(orgId, fine.id, 10, 30);
    const base = { series: 0, attemptNumber: 1, startedAt: new Date(), latencyMs: 3, excerpt: null, nextAttemptAt: null, orgId };
    await queue.recordMany([
      { ...base, endpointId: gone.id, deliveryId: goneId!, statusCode: 410, error: 'gone', status: 'exhausted', gone: true },
      { ...base, endpointId: fine.id, deliveryId: fineId!, statusCode: 200, error: null, status: 'delivered', gone: false },
    ]);

    const em = stack.orm.em.fork();
    const [goneRow, fineRow] = await Promise.all([
      em.findOneOrFail(WebhookEndpoint, { id: gone.id }, ALL_TENANTS),
      em.findOneOrFail(WebhookEndpoint, { id: fine.id }, ALL_TENANTS),
    ]);
    expect(goneRow.enabled).toBe(false);
    expect(goneRow.disabledReason).toContain(`410 Gone to delivery ${goneId}`);
    expect(fineRow.enabled).toBe(true);
    expect((await deliveriesOf(gone.id)).map((d) => d.status)).toEqual(['exhausted']);
    expect((await deliveriesOf(fine.id)).map((d) => d.status)).toEqual(['delivered']);
  });

  it('renews the leases of claimed rows only, and gives back a retry as failed, due when it was', async () => {
    const endpoint = await insertEndpoint(stack.orm, orgId);
    const queue = createEndpointQueue(stack.orm);
    const [retryId] = await dueDeliveries(endpoint.id, 1);
    const connection = stack.orm.em.getConnection();
    const due = new Date(Date.now() - 60_000);
    await connection.execute(
      `update webhook_deliveries set status = 'failed', series_attempts = 1, next_attempt_at = ? where id = ?`,
      [due, retryId],
      'run',
    );
    await connection.execute(
      `insert into webhook_attempts (id, org_id, delivery_id, series, attempt_number, started_at, status_code, error, created_at)
       values (?, ?, ?, 0, 1, ?, 500, 'boom', now())`,
      [newId(), orgId, retryId, due],
      'run',
    );
    const [claimed] = await queue.claim(orgId, endpoint.id, 10, 1);
    expect(claimed).toMatchObject({ id: retryId, series_attempts: 1 });
    await queue.extendLeases(orgId, [retryId!], 600);
    const [leased] = await deliveriesOf(endpoint.id);
    expect(leased!.leaseUntil!.getTime()).toBeGreaterThan(Date.now() + 500_000);

    await queue.unclaim(orgId, [claimed!]);
    const [back] = await deliveriesOf(endpoint.id);
    expect([back!.status, back!.leaseUntil, back!.nextAttemptAt!.getTime()]).toEqual(['failed', null, due.getTime()]);
  });

  it('keeps the series count on the row, and the reaper repairs a stale one whose claimed attempt number was already on record', async () => {
    const endpoint = await insertEndpoint(stack.orm, orgId);
    const queue = createEndpointQueue(stack.orm);
    const [id] = await dueDeliveries(endpoint.id, 1);
    const connection = stack.orm.em.getConnection();
    // Attempt 1 on record but not counted on the row (as a worker of an earlier version leaves it).
    await connection.execute(`update webhook_deliveries set status = 'failed', attempt_count = 1 where id = ?`, [id], 'run');
    await connection.execute(
      `insert into webhook_attempts (id, org_id, delivery_id, series, attempt_number, started_at, status_code, error, created_at)
       values (?, ?, ?, 0, 1, now(), 500, 'boom', now())`,
      [newId(), orgId, id],
      'run',
    );
    const record = (attemptNumber: number, status: 'delivered' | 'failed') => ({
      orgId,
      endpointId: endpoint.id,
      deliveryId: id!,
      series: 0,
      attemptNumber,
      startedAt: new Date(),
      statusCode: status === 'delivered' ? 200 : 500,
      latencyMs: 5,
      error: null,
      excerpt: null,
      status,
      nextAttemptAt: status === 'failed' ? new Date(Date.now() - 1000) : null,
      gone: false,
    });
    const [stale] = await queue.claim(orgId, endpoint.id, 10, 1);
    expect(stale).toMatchObject({ id, series_attempts: 0 });
    await queue.recordMany([record(1, 'failed')]);
    expect((await deliveriesOf(endpoint.id))[0]).toMatchObject({ status: 'delivering', seriesAttempts: 0, attemptCount: 1 });

    await connection.execute(`update webhook_deliveries set lease_until = now() - interval '1 second' where id = ?`, [id], 'run');
    expect(await queue.reapLapsed(orgId, endpoint.id, 5, 'abandoned')).toBe(1);
    expect((await deliveriesOf(endpoint.id))[0]).toMatchObject({ status: 'failed', seriesAttempts: 2, attemptCount: 2 });

    const [next] = await queue.claim(orgId, endpoint.id, 10, 1);
    expect(next).toMatchObject({ id, series_attempts: 2 });
    await queue.recordMany([record(3, 'delivered')]);
    expect((await deliveriesOf(endpoint.id))[0]).toMatchObject({ status: 'delivered', seriesAttempts: 3, attemptCount: 3 });
    const attempts = await stack.orm.em
      .fork()
      .find(WebhookAttempt, { deliveryId: id }, { ...ALL_TENANTS, orderBy: { attemptNumber: 'asc' } });
    expect(attempts.map((a) => [a.attemptNumber, a.error])).toEqual([
      [1, 'boom'],
      [2, 'abandoned'],
      [3, null],
    ]);
  });
});
