/**
 * 4. Webhooks: delivery throughput against plain signed POSTs, and commit-to-first-attempt
 * latency at a steady event rate, through a real `herald worker` process and the Temporal dev
 * server to a receiver on 127.0.0.1 that answers 200 at once.
 *
 * Each run measures, in order:
 * 1. baseline: plain POSTs from the harness process to the receiver, each signed as a delivery
 *    is (HMAC of the body, both schemes) over 20 kept-alive connections, 20 in flight; and the
 *    round trip of one such POST at a time;
 * 2. throughput: events committed in one transaction (1,000 contacts by default), fanned out to
 *    10 endpoints, from the commit to the last delivery received, and each event's first
 *    delivery after the commit (p50/p99 over events); with the CPU time every process on the
 *    path used per delivery meanwhile (where the time goes);
 * 3. latency: 50 events per second, each committed alone, from its commit to its first attempt
 *    arriving at the receiver.
 */
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { type Event, WebhookEndpoint } from '../db/entities/index.ts';
import { createOrm } from '../db/orm.ts';
import { encryptSecret } from '../src/crypto/secret-box.ts';
import { waitFor } from '../src/dev/processes.ts';
import { recordEvent } from '../src/modules/events/events.fns.ts';
import { signatureHeaders } from '../src/modules/webhooks/signing.ts';
import { startWebhookReceiver } from '../test/support/webhook-receiver.ts';
import type { BenchContext } from './lib/context.ts';
import { cpuAccount, postgresOf } from './lib/proc.ts';
import { fmt, med, quantile } from './lib/stats.ts';
import type { Benchmark } from './lib/types.ts';

const ENDPOINTS = 10;
const CONCURRENCY = 20;
/** The baseline's connections: kept alive, as many as it has requests in flight. */
const baselineAgent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
const RATE = 50;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One signed POST over the baseline's kept-alive connections, signed as the delivery engine signs. */
function signedPost(port: number, path: string, secret: string, id: string): Promise<void> {
  const body = JSON.stringify({
    id,
    object: 'event',
    type: 'contact.created',
    created_at: new Date().toISOString(),
    api_version: '1.0.0',
    data: { n: id },
  });
  const headers = {
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(body)),
    ...signatureHeaders({ secret, deliveryId: id, timestamp: Math.floor(Date.now() / 1000), body }),
  };
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', headers, agent: baselineAgent }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

export const benchmark: Benchmark = {
  name: 'webhooks',
  description: `Webhook deliveries/s (events fanned out to ${ENDPOINTS} endpoints) against plain signed POSTs from one process (${CONCURRENCY} kept-alive connections), each event's first delivery in that burst, and commit-to-first-attempt latency at ${RATE} events/s against one signed POST's round trip.`,
  needsTemporal: 'own',

  async setup(context: BenchContext) {
    const quick = context.options.quick;
    const deliveries = quick ? 2_000 : 10_000;
    const baselinePosts = quick ? 2_000 : 10_000;
    const latencySeconds = quick ? 4 : 10;

    const databaseUrl = await context.database();
    const workspace = await context.workspace(databaseUrl);
    const receiver = await startWebhookReceiver();
    context.defer(() => receiver.close());
    const worker = await context.start('worker', await context.env(databaseUrl, { WEBHOOK_RETRY_SCHEDULE: '0s,1s,5s' }), { profile: true });
    const temporal = await context.temporal();
    const orm = await createOrm({ databaseUrl, poolMax: 4 });
    context.defer(() => orm.close());

    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const em = orm.em.fork();
    em.setFilterParams('tenant', { orgId: workspace.orgId });
    const endpoint = (prefix: string, i: number, event: 'contact.created' | 'contact.updated') =>
      em.create(WebhookEndpoint, {
        orgId: workspace.orgId,
        name: `${prefix} ${i}`,
        url: receiver.url(`/${prefix}-${i}`),
        description: '',
        events: [event],
        enabled: true,
        secretEncrypted: encryptSecret(Buffer.from(context.services.encryptionKey, 'base64'), secret),
        keyMode: 'test',
        disabledReason: null,
        disabledAt: null,
      });
    for (let i = 0; i < ENDPOINTS; i += 1) endpoint('throughput', i, 'contact.created');
    endpoint('latency', 0, 'contact.updated');
    await em.flush();

    const commit = (type: 'contact.created' | 'contact.updated', count: number) =>
      em.fork().transactional(async (tx) => {
        const events: Event[] = [];
        for (let i = 0; i < count; i += 1) events.push(recordEvent(tx, workspace.orgId, type, { contact: { n: i } }));
        await tx.flush();
        return events;
      });
    const throughputCount = () => receiver.requests().filter((r) => r.path.startsWith('/throughput-')).length;
    let latencySeen = 0;

    /**
     * The plain loop as a fan-out: POST n carries event ⌊n / endpoints⌋ to endpoint n mod
     * endpoints, events in order, as every endpoint drains oldest first. Besides its rate, the
     * same "each event's first delivery" figure the throughput run takes, measured from the
     * loop's start: what the bare protocol itself reaches on this measure at this size.
     */
    async function baseline(posts: number): Promise<{ rps: number; p50Ms: number; firstDeliveryMs: number[] }> {
      let next = 0;
      const started = performance.now();
      const firstByEvent = new Map<number, number>();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < posts) {
            const n = next;
            next += 1;
            await signedPost(receiver.port, `/baseline-${n % ENDPOINTS}`, secret, `b${n}`);
            const event = Math.floor(n / ENDPOINTS);
            if (!firstByEvent.has(event)) firstByEvent.set(event, performance.now() - started);
          }
        }),
      );
      const rps = posts / ((performance.now() - started) / 1000);
      const single: number[] = [];
      for (let i = 0; i < 50; i += 1) {
        const t0 = performance.now();
        await signedPost(receiver.port, '/baseline', secret, `s${i}`);
        single.push(performance.now() - t0);
      }
      return {
        rps,
        firstDeliveryMs: [...firstByEvent.values()].sort((a, b) => a - b),
        p50Ms: quantile(
          single.sort((a, b) => a - b),
          0.5,
        ),
      };
    }

    /**
     * Deliveries/s, each event's first delivery after the commit (sorted ms), and the CPU each
     * process on the path spent per delivery (`bench`: this process, the receiver and the writer).
     */
    async function throughput(): Promise<{ rate: number; firstDeliveryMs: number[]; cpuPerDelivery: Record<string, number> }> {
      const before = throughputCount();
      const events = Math.ceil(deliveries / ENDPOINTS);
      const total = events * ENDPOINTS;
      const cpu = cpuAccount({ worker: worker.pid, temporal: temporal.pid, postgres: postgresOf(databaseUrl), bench: 'this' });
      const started = performance.now();
      await commit('contact.created', events);
      const committed = performance.now();
      await waitFor(`${total} deliveries`, () => Promise.resolve(throughputCount() - before >= total ? true : undefined), 600_000, 20);
      const arrived = receiver
        .requests()
        .filter((r) => r.path.startsWith('/throughput-'))
        .slice(before);
      const first = new Map<string, number>();
      for (const r of arrived) {
        const event = String(r.headers['herald-event-id']);
        first.set(event, Math.min(first.get(event) ?? Number.POSITIVE_INFINITY, r.at - committed));
      }
      return {
        rate: total / ((Math.max(...arrived.map((r) => r.at)) - started) / 1000),
        firstDeliveryMs: [...first.values()].sort((a, b) => a - b),
        cpuPerDelivery: cpu.perUnit(total),
      };
    }

    async function latency(seconds: number): Promise<number[]> {
      const committedAt = new Map<string, number>();
      const count = RATE * seconds;
      const started = performance.now();
      const writes: Promise<void>[] = [];
      for (let i = 0; i < count; i += 1) {
        const wait = started + (i * 1000) / RATE - performance.now();
        if (wait > 0) await sleep(wait);
        writes.push(commit('contact.updated', 1).then(([event]) => void committedAt.set(event!.id, performance.now())));
      }
      await Promise.all(writes);
      latencySeen += count;
      await waitFor(
        'the latency deliveries',
        () => Promise.resolve(receiver.requests('/latency-0').length >= latencySeen ? true : undefined),
        120_000,
        20,
      );
      return receiver
        .requests('/latency-0')
        .flatMap((r) => {
          const at = committedAt.get(String(r.headers['herald-event-id']));
          return at === undefined ? [] : [r.at - at];
        })
        .sort((a, b) => a - b);
    }

    return {
      async warmup() {
        await baseline(200);
        await latency(1);
      },
      async run() {
        const plain = await baseline(baselinePosts);
        const { rate: deliveryRate, firstDeliveryMs, cpuPerDelivery } = await throughput();
        const latencies = await latency(latencySeconds);
        const p50 = quantile(latencies, 0.5);
        return {
          baseline_rps: plain.rps,
          baseline_post_p50_ms: plain.p50Ms,
          baseline_first_delivery_p99_ms: quantile(plain.firstDeliveryMs, 0.99),
          deliveries_per_s: deliveryRate,
          ratio_of_baseline: deliveryRate / plain.rps,
          burst_first_delivery_p50_ms: quantile(firstDeliveryMs, 0.5),
          burst_first_delivery_p99_ms: quantile(firstDeliveryMs, 0.99),
          ...Object.fromEntries(Object.entries(cpuPerDelivery).map(([name, ms]) => [`cpu_ms_per_delivery_${name}`, ms])),
          first_attempt_p50_ms: p50,
          first_attempt_p99_ms: quantile(latencies, 0.99),
          first_attempt_max_ms: latencies.at(-1) ?? Number.NaN,
          latency_ratio_of_post: p50 / plain.p50Ms,
        };
      },
      close: () => Promise.resolve(),
    };
  },

  summarize(stats) {
    return [
      {
        name: 'webhooks-throughput',
        figure: `${fmt(med(stats, 'deliveries_per_s'))} deliveries/s; each event's first delivery p50 ${fmt(med(stats, 'burst_first_delivery_p50_ms'))} ms, p99 ${fmt(med(stats, 'burst_first_delivery_p99_ms'))} ms`,
        ratio: med(stats, 'ratio_of_baseline'),
        baseline: `plain signed POSTs from one process over ${CONCURRENCY} kept-alive connections, ${fmt(med(stats, 'baseline_rps'))}/s; fanned out event by event, each event's first POST p99 ${fmt(med(stats, 'baseline_first_delivery_p99_ms'))} ms`,
        target: {
          text: '≥ 30 %, first delivery p99 < 1 s',
          met: med(stats, 'ratio_of_baseline') >= 0.3 && med(stats, 'burst_first_delivery_p99_ms') < 1000,
        },
      },
      {
        name: 'webhooks-latency',
        figure: `first attempt p50 ${fmt(med(stats, 'first_attempt_p50_ms'))} ms, p99 ${fmt(med(stats, 'first_attempt_p99_ms'))} ms after commit at ${RATE} events/s`,
        ratio: med(stats, 'latency_ratio_of_post'),
        baseline: `one signed POST's round trip, ${fmt(med(stats, 'baseline_post_p50_ms'))} ms`,
        target: { text: 'p99 < 1 s', met: med(stats, 'first_attempt_p99_ms') < 1000 },
      },
    ];
  },
};
