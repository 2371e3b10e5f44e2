import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookDelivery } from '../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { startApi, type RunningApi } from '../../src/main-api.ts';
import { reportQueuesFrom, startMetricsServer, type MetricsServer } from '../../src/metrics/metrics.ts';
import { readQueueDepths } from '../../src/queue/queue-depth.repo.ts';
import { recordEvent } from '../../src/modules/events/events.fns.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { idem } from '../support/api.ts';
import { startCountingRelay } from '../support/counting-relay.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient } from '../support/http.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';
import { insertSigningEndpoint } from '../support/webhook-rows.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/** The value of one sample of the exposition text, or undefined when it is absent. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labelText = /\{(.*)\}/.exec(line)?.[1] ?? '';
    if (wanted.every((pair) => labelText.split(',').includes(pair))) return Number(line.split(' ').at(-1));
  }
  return undefined;
}

describe('Prometheus metrics at /metrics', () => {
  let stack: TestStack;
  let relay: Awaited<ReturnType<typeof startCountingRelay>>;
  let receiver: WebhookReceiver;
  let api: RunningApi;
  let worker: RunningWorker;
  let metrics: MetricsServer;
  const scrape = async () => {
    const response = await fetch(metrics.url);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return response.text();
  };

  beforeAll(async () => {
    installTemporalLogging(createLogger('silent'));
    relay = await startCountingRelay();
    receiver = await startWebhookReceiver();
    stack = await createTestStack({ SMTP_RELAY_URL: `smtp://127.0.0.1:${relay.port}` });
    api = await startApi(stack.config, createLogger('silent'));
    worker = await startWorker(stack.config, createLogger('silent'));
    metrics = await startMetricsServer({ port: 0, host: '127.0.0.1' });
  });

  afterAll(async () => {
    await metrics?.close();
    await worker?.shutdown();
    await api?.close();
    await stack?.close();
    await receiver?.close();
    await relay?.close();
  });

  it('counts deliveries by outcome, times them and the API, and reports the queues', async () => {
    const { org, key } = await createOrgWithKey(stack.orm, { mode: 'live' });
    const domain = await addSendingDomain(stack.orm, org.id);
    await setCredits(stack.orm, org.id, 10);
    const { endpoint } = await insertSigningEndpoint(stack.orm, stack.config.encryptionKey!, org.id, receiver.url('/metrics-hook'), [
      'contact.created',
    ]);
    await scopeToOrg(stack.orm.em, org.id).transactional((tx) =>
      Promise.resolve(recordEvent(tx, org.id, 'contact.created', { contact: { _id: 'c1' } })),
    );
    const sent = await apiClient(api.url, key)('POST', '/api/v1/outbox/emails', {
      body: { from: `app@${domain.domain}`, to: 'someone@example.com', subject: 'Metrics', text: 'Hello' },
      headers: idem(),
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    await waitFor(
      'the webhook and the email to go out',
      () => Promise.resolve(relay.total() >= 1 && receiver.requests('/metrics-hook').length >= 1 ? true : undefined),
      30_000,
      20,
    );

    const text = await waitFor(
      'both outcomes in the metrics',
      async () => {
        const body = await scrape();
        const webhooks = sample(body, 'herald_deliveries_total', { pipeline: 'webhooks', outcome: 'delivered' }) ?? 0;
        const sends = sample(body, 'herald_deliveries_total', { pipeline: 'sends', outcome: 'sent' }) ?? 0;
        return webhooks >= 1 && sends >= 1 ? body : undefined;
      },
      30_000,
      100,
    );
    expect(sample(text, 'herald_delivery_latency_seconds_count', { pipeline: 'webhooks' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'herald_delivery_latency_seconds_count', { pipeline: 'sends' })).toBeGreaterThanOrEqual(1);
    expect(
      sample(text, 'herald_http_request_duration_seconds_count', { method: 'POST', route: '/api/v1/outbox/emails', status: '202' }),
    ).toBeGreaterThanOrEqual(1);
    for (const pipeline of ['webhooks', 'sends', 'inbound']) {
      expect(sample(text, 'herald_queue_depth', { pipeline }), pipeline).toBeGreaterThanOrEqual(0);
      expect(sample(text, 'herald_queue_oldest_due_age_seconds', { pipeline }), pipeline).toBeGreaterThanOrEqual(0);
    }
    expect(sample(text, 'herald_process_resident_memory_bytes', {})).toBeGreaterThan(0);

    // A due row nobody takes (its actor is stopped): the depth and the oldest due age show it.
    await worker.shutdown();
    const [delivery] = await stack.orm.em.fork().find(WebhookDelivery, { webhookId: endpoint.id }, ALL_TENANTS);
    await stack.orm.em
      .fork()
      .nativeUpdate(
        WebhookDelivery,
        { id: delivery!.id },
        { status: 'failed', nextAttemptAt: new Date(Date.now() - 120_000) },
        ALL_TENANTS,
      );
    reportQueuesFrom(() => readQueueDepths(stack.orm.em));
    const stuck = await scrape();
    expect(sample(stuck, 'herald_queue_depth', { pipeline: 'webhooks' })).toBeGreaterThanOrEqual(1);
    expect(sample(stuck, 'herald_queue_oldest_due_age_seconds', { pipeline: 'webhooks' })).toBeGreaterThanOrEqual(119);
    expect((await fetch(metrics.url.replace('/metrics', '/other'))).status).toBe(404);
    worker = await startWorker(stack.config, createLogger('silent'));
  }, 120_000);
});
