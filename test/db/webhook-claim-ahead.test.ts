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
  it('sends one at a time at concurrency 1 and puts the rows it claimed but never sent back in the queue when cancelled', async () => {
    receiver.respond('/slow', () => 'hang');
    const { endpoint } = await insertSigningEndpoint(stack.orm, stack.config.encryptionKey!, orgId, receiver.url('/slow'));
    const ids = await dueDeliveries(endpoint.id, 5);
    const drainer = createEndpointDrainer({ orm: stack.orm, config: stack.config, wakes: noWakes, http: { timeoutMs: 500 } });
    const controller = new AbortController();
    const drained = drainer.drain({ orgId, endpointId: endpoint.id }, { heartbeat: () => {}, signal: controller.signal });
    await receiver.waitForRequests('/slow', 1, 10_000);
    const claimed = await deliveriesOf(endpoint.id);
    expect(claimed.filter((d) => d.status === 'delivering').map((d) => d.id)).toEqual(ids);
    controller.abort();
    await drained;

    expect(receiver.requests('/slow')).toHaveLength(1);
    const rows = await deliveriesOf(endpoint.id);
    const sent = rows.find((d) => d.id === receiver.requests('/slow')[0]!.headers['herald-delivery-id']);
    expect(sent?.status, JSON.stringify(rows)).toBe('failed');
    const givenBack = rows.filter((d) => d !== sent);
    expect(givenBack.map((d) => [d.status, d.leaseUntil, d.attemptCount])).toEqual(givenBack.map(() => ['queued', null, 0]));
    for (const row of givenBack) expect(row.nextAttemptAt!.getTime()).toBeLessThanOrEqual(Date.now());
    const attempts = await stack.orm.em.fork().count(WebhookAttempt, { deliveryId: { $in: ids } }, ALL_TENANTS);
    expect(attempts).toBe(1);
  });

  it('ends the rows in line without a request once it sees the endpoint deleted', async () => {
    receiver.respond('/deleted', () => 'hang');
    const { endpoint } = await insertSigningEndpoint(stack.orm, stack.config.encryptionKey!, orgId, receiver.url('/deleted'));
    const ids = await dueDeliveries(endpoint.id, 4);
    const drainer = createEndpointDrainer({ orm: stack.orm, config: stack.config, wakes: noWakes, http: { timeoutMs: 1_500 } });
    const drained = drainer.drain({ orgId, endpointId: endpoint.id }, { heartbeat: () => {}, signal: new AbortController().signal });
    await receiver.waitForRequests('/deleted', 1, 10_000);
    await stack.orm.em.getConnection().execute(`delete from webhook_endpoints where id = ?`, [endpoint.id], 'run');
    await drained;

    expect(receiver.requests('/deleted')).toHaveLength(1);
    const sentId = receiver.requests('/deleted')[0]!.headers['herald-delivery-id'];
    const rows = await deliveriesOf(endpoint.id);
    expect(rows.map((d) => d.id)).toEqual(ids);
    const inLine = rows.filter((d) => d.id !== sentId);
    expect(inLine.map((d) => [d.status, d.lastError, d.attemptCount])).toEqual(inLine.map(() => ['exhausted', ENDPOINT_DELETED_ERROR, 0]));
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
    await connection.execute(`update webhook_deliveries set status = 'failed', next_attempt_at = ? where id = ?`, [due, retryId], 'run');
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
});
