import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookAttempt, WebhookDelivery } from '../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { waitFor, type Service } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { startApi, type RunningApi } from '../../src/main-api.ts';
import { recordEvent } from '../../src/modules/events/events.fns.ts';
import { ABANDONED_ERROR } from '../../src/modules/webhooks/delivery-engine.ts';
import { CLAIM_BATCH } from '../../src/modules/webhooks/claim-ahead.ts';
import { RECORD_GROUP } from '../../src/modules/webhooks/endpoint-drain.ts';
import { idem } from '../support/api.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { startCountingRelay } from '../support/counting-relay.ts';
import { apiClient } from '../support/http.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';
import { insertSigningEndpoint } from '../support/webhook-rows.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { spawnWorkerProcess } from '../support/worker-process.ts';
import { IN_FLIGHT_PER_CONNECTION } from '../../src/modules/outbound/domain-drain.ts';

/**
 * kill -9 of a `herald worker` process while its actors drain 1,000 sends and 1,000 webhook
 * deliveries, then a new worker: every accepted item reaches a final state, none is lost, and
 * the only duplicates (by Message-ID at the relay, by delivery id at the receiver) are items
 * that were in flight at the kill.
 */

const ITEMS = 1_000;
const POOL = 5;

describe('kill -9 of the worker while its actors drain 1,000 sends and 1,000 webhook deliveries', () => {
  let relay: Awaited<ReturnType<typeof startCountingRelay>>;
  let receiver: WebhookReceiver;
  let stack: TestStack;
  let api: RunningApi;
  let worker: Service | null = null;

  beforeAll(async () => {
    relay = await startCountingRelay({ delayMs: 5 });
    receiver = await startWebhookReceiver();
    stack = await createTestStack({
      SMTP_RELAY_URL: `smtp://127.0.0.1:${relay.port}`,
      SMTP_RELAY_POOL_SIZE: String(POOL),
      SMTP_RELAY_MAX_CONNECTIONS: String(POOL),
      WEBHOOK_RETRY_SCHEDULE: '0s,1s,1s,1s,1s',
    });
    api = await startApi(stack.config, createLogger('silent'));
  });

  afterAll(async () => {
    await worker?.stop();
    await api?.close();
    await stack?.close();
    await receiver?.close();
    await relay?.close();
  });

  it('brings every accepted item to a final state; duplicates only for what was in flight', async () => {
    const { org, key } = await createOrgWithKey(stack.orm, { rateLimitPerMinute: 100_000, burst: 10_000, mode: 'live' });
    const domain = await addSendingDomain(stack.orm, org.id);
    await setCredits(stack.orm, org.id, ITEMS);
    const { endpoint } = await insertSigningEndpoint(stack.orm, stack.config.encryptionKey!, org.id, receiver.url('/crash'), [
      'contact.created',
    ]);
    // Slow enough that the kill lands mid-burst.
    receiver.respond('/crash', () => ({ delayMs: 5 }));

    // 1,000 sends accepted by the API (25 at a time), 1,000 events committed in one transaction.
    const request = apiClient(api.url, key);
    const emailIds: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 25 }, async () => {
        while (next < ITEMS) {
          const index = (next += 1);
          const response = await request('POST', '/api/v1/outbox/emails', {
            body: { from: `app@${domain.domain}`, to: `user${index}@example.com`, subject: `Crash ${index}`, text: 'Hello' },
            headers: idem(),
          });
          expect(response.status, JSON.stringify(response.body)).toBe(202);
          emailIds.push((response.body.data as { _id: string })._id);
        }
      }),
    );
    await scopeToOrg(stack.orm.em, org.id).transactional((tx) => {
      for (let i = 0; i < ITEMS; i += 1)
        recordEvent(tx, org.id, 'contact.created', { contact: { _id: `c${i}`, email: `c${i}@example.com` } });
      return Promise.resolve();
    });

    worker = await spawnWorkerProcess(stack);
    await waitFor(
      'both pipelines to be mid-burst',
      () => Promise.resolve(relay.total() >= 150 && receiver.requests('/crash').length >= 150 ? true : undefined),
      120_000,
      5,
    );
    worker.child.kill('SIGKILL');
    await worker.exited;
    worker = null;
    const atKill = { relay: relay.total(), receiver: receiver.requests('/crash').length };
    expect(atKill.relay).toBeLessThan(ITEMS);
    expect(atKill.receiver).toBeLessThan(ITEMS);

    worker = await spawnWorkerProcess(stack);
    const connection = stack.orm.em.getConnection();
    await waitFor(
      'every email to settle',
      async () => {
        const [row] = await connection.execute<{ open: number }[]>(
          `select count(*)::int as open from transactional_emails where org_id = ? and status not in ('sent', 'failed', 'cancelled')`,
          [org.id],
        );
        return row!.open === 0 ? true : undefined;
      },
      240_000,
      250,
    );
    await waitFor(
      'every webhook delivery to finish',
      async () => {
        const open = await stack.orm.em
          .fork()
          .count(WebhookDelivery, { webhookId: endpoint.id, status: { $nin: ['delivered', 'exhausted'] } }, ALL_TENANTS);
        const total = await stack.orm.em.fork().count(WebhookDelivery, { webhookId: endpoint.id }, ALL_TENANTS);
        return total === ITEMS && open === 0 ? true : undefined;
      },
      240_000,
      250,
    );

    // Sends: every email sent, every Message-ID at the relay; copies only within the window in flight.
    const emails = await connection.execute<{ status: string; message_id: string }[]>(
      `select status, message_id from transactional_emails where org_id = ?`,
      [org.id],
    );
    expect(emails).toHaveLength(ITEMS);
    expect(emails.filter((e) => e.status !== 'sent')).toEqual([]);
    const missing = emails.filter((e) => !relay.accepted.has(e.message_id));
    expect(missing).toEqual([]);
    const sendCopies = [...relay.accepted.values()].reduce((sum, n) => sum + (n - 1), 0);
    // In flight at the kill: at most the drain's window (the relay pool × emails in flight per
    // connection; a slot is held until its email's record commits).
    expect(sendCopies).toBeLessThanOrEqual(POOL * IN_FLIGHT_PER_CONNECTION);

    // Webhooks: every delivery delivered, each delivery id received; copies only of abandoned attempts.
    const deliveries = await stack.orm.em.fork().find(WebhookDelivery, { webhookId: endpoint.id }, ALL_TENANTS);
    expect(deliveries.filter((d) => d.status !== 'delivered')).toEqual([]);
    const received = new Map<string, number>();
    for (const r of receiver.requests('/crash')) {
      const id = r.headers['herald-delivery-id'] as string;
      received.set(id, (received.get(id) ?? 0) + 1);
    }
    expect(deliveries.filter((d) => !received.has(d.id))).toEqual([]);
    const webhookCopies = [...received.values()].reduce((sum, n) => sum + (n - 1), 0);
    const abandoned = await stack.orm.em
      .fork()
      .count(WebhookAttempt, { deliveryId: { $in: deliveries.map((d) => d.id) }, error: ABANDONED_ERROR }, ALL_TENANTS);
    expect(webhookCopies).toBeLessThanOrEqual(abandoned);
    // Unrecorded at the kill: the requests in flight, the rows claimed ahead of them, and the answers
    // waiting for their group commit.
    expect(abandoned).toBeLessThanOrEqual(stack.config.webhooks.endpointConcurrency + CLAIM_BATCH + RECORD_GROUP);

    console.log(
      `pipeline crash: at the kill ${atKill.relay} messages at the relay and ${atKill.receiver} webhook requests of ${ITEMS} each; ` +
        `afterwards all ${ITEMS} emails sent (${sendCopies} duplicate(s) at the relay by Message-ID) and all ${ITEMS} deliveries delivered ` +
        `(${webhookCopies} duplicate request(s), ${abandoned} abandoned attempt(s) on record)`,
    );
  }, 600_000);
});
