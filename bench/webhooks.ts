/**
 * Benchmark of webhook delivery: throughput against plain signed POSTs, and commit-to-first-
 * attempt latency at a steady event rate.
 *
 *   node_modules/.bin/node bench/webhooks.ts [--deliveries=2000] [--endpoints=10] [--concurrency=16]
 *                                            [--rate=50] [--seconds=20] [--baseline=3000]
 *
 * Sets up a scratch database (the PostgreSQL the tests use: DATABASE_URL's server, else
 * 127.0.0.1:5432, else an embedded one), an in-memory Temporal dev server, a receiver on
 * 127.0.0.1 that answers 200 at once, and a real `herald worker` process. Then:
 *
 * 1. baseline: `--baseline` POSTs from this one Node process to the receiver, each signed as a
 *    delivery is (HMAC of the body, both schemes) on a fresh connection like the worker's,
 *    `--concurrency` in flight;
 * 2. throughput: `--deliveries` deliveries (events committed in one go, fanned out to
 *    `--endpoints` endpoints) from the first commit to the last request received;
 * 3. latency: `--rate` events per second for `--seconds`, each committed alone; the time from
 *    its commit to its first attempt arriving at the receiver.
 *
 * Prints `bench webhooks-throughput: …` and `bench webhooks-latency: …`.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { migrateUp } from '../db/migrate.ts';
import { type Event, WebhookEndpoint } from '../db/entities/index.ts';
import { createOrm } from '../db/orm.ts';
import { loadDevEnv } from '../src/config.ts';
import { encryptSecret } from '../src/crypto/secret-box.ts';
import { cacheDir, MAIN_ENTRY } from '../src/dev/paths.ts';
import { freePort } from '../src/dev/ports.ts';
import { dropDatabase, ensureDatabase, resolvePostgres, withDatabase } from '../src/dev/postgres.ts';
import { spawnService, waitFor } from '../src/dev/processes.ts';
import { resolveTemporalBinary } from '../src/dev/temporal-binary.ts';
import { startTemporalDevServer } from '../src/dev/temporal-server.ts';
import { recordEvent } from '../src/modules/events/events.fns.ts';
import { createOrgsService } from '../src/modules/orgs/orgs.service.ts';
import { signatureHeaders } from '../src/modules/webhooks/signing.ts';
import { startWebhookReceiver } from '../test/support/webhook-receiver.ts';

const { values: args } = parseArgs({
  options: {
    deliveries: { type: 'string', default: '2000' },
    endpoints: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '16' },
    rate: { type: 'string', default: '50' },
    seconds: { type: 'string', default: '20' },
    baseline: { type: 'string', default: '3000' },
  },
});
const DELIVERIES = Number(args.deliveries);
const ENDPOINTS = Number(args.endpoints);
const CONCURRENCY = Number(args.concurrency);
const RATE = Number(args.rate);
const SECONDS = Number(args.seconds);
const BASELINE = Number(args.baseline);

const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

/** One signed POST on a fresh connection, as the delivery engine sends it. */
function signedPost(port: number, path: string, secret: string, id: string): Promise<void> {
  const body = JSON.stringify({ id, object: 'event', type: 'contact.created', created_at: new Date().toISOString(), api_version: '1.0.0', data: { n: id } });
  const headers = {
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(body)),
    ...signatureHeaders({ secret, deliveryId: id, timestamp: Math.floor(Date.now() / 1000), body }),
  };
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const dev = loadDevEnv();
const scratch = mkdtempSync(join(tmpdir(), 'herald-bench-'));
const postgres = await resolvePostgres({ databaseUrl: dev.DATABASE_URL, dataDir: scratch, persistent: false, log });
const database = `herald_bench_webhooks_${process.pid}`;
const databaseUrl = withDatabase(postgres.serverUrl, database);
const temporalServer = await startTemporalDevServer({
  binary: resolveTemporalBinary({ explicit: dev.TEMPORAL_BIN, cacheDir: cacheDir(dev), path: dev.PATH, log }),
  port: await freePort(),
  uiPort: null,
  dbFile: null,
  namespace: 'herald-bench',
  logFile: join(scratch, 'temporal.log'),
});
const receiver = await startWebhookReceiver();
const encryptionKey = randomBytes(32);
let worker: Awaited<ReturnType<typeof spawnService>> | undefined;

try {
  await ensureDatabase(databaseUrl);
  const orm = await createOrm({ databaseUrl, poolMax: 4 });
  await migrateUp(orm);

  // 1. Baseline: plain signed POSTs from this process.
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  for (let i = 0; i < 200; i += 1) await signedPost(receiver.port, '/warmup', secret, `w${i}`);
  let next = 0;
  const baselineStart = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < BASELINE) {
        next += 1;
        await signedPost(receiver.port, '/baseline', secret, `b${next}`);
      }
    }),
  );
  const baselineRate = BASELINE / ((performance.now() - baselineStart) / 1000);
  log(`baseline: ${BASELINE} signed POSTs, ${CONCURRENCY} in flight, fresh connections: ${baselineRate.toFixed(0)}/s`);

  // The worker: a real `herald worker` process.
  const env = {
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalServer.address,
    TEMPORAL_NAMESPACE: temporalServer.namespace,
    TEMPORAL_TASK_QUEUE_PREFIX: `bench${process.pid}`,
    HERALD_ENCRYPTION_KEY: encryptionKey.toString('base64'),
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_RETRY_SCHEDULE: '0s,1s,5s',
  };
  let polling = false;
  worker = spawnService({
    name: 'worker',
    command: process.execPath,
    args: [MAIN_ENTRY, 'worker'],
    env,
    onLine: (line) => {
      if (line.includes('"msg":"worker polling"')) polling = true;
      else if (/"level":"(warn|error)"/.test(line)) process.stderr.write(`[worker] ${line}\n`);
    },
  });
  await waitFor('the worker to poll', () => Promise.resolve(polling ? true : undefined), 120_000);

  const { org } = await createOrgsService({ orm }).createOrganization({ name: `Bench ${process.pid}` });
  const em = orm.em.fork();
  em.setFilterParams('tenant', { orgId: org.id });
  const endpointsFor = (prefix: string, count: number) =>
    Array.from({ length: count }, (_, i) =>
      em.create(WebhookEndpoint, {
        orgId: org.id,
        name: `${prefix} ${i}`,
        url: receiver.url(`/${prefix}-${i}`),
        description: '',
        events: [prefix === 'throughput' ? 'contact.created' : 'contact.updated'],
        enabled: true,
        secretEncrypted: encryptSecret(encryptionKey, secret),
        keyMode: 'test',
        disabledReason: null,
        disabledAt: null,
      }),
    );
  endpointsFor('throughput', ENDPOINTS);
  endpointsFor('latency', 1);
  await em.flush();
  await sleep(100);

  // Warm-up: a few deliveries through the whole path.
  for (let i = 0; i < 5; i += 1) {
    await em.fork().transactional((tx) => Promise.resolve(recordEvent(tx, org.id, 'contact.updated', { warmup: i })));
  }
  await waitFor('the warm-up deliveries', () => Promise.resolve(receiver.requests('/latency-0').length >= 5 ? true : undefined), 60_000, 50);

  // 2. Throughput.
  const eventCount = Math.ceil(DELIVERIES / ENDPOINTS);
  const total = eventCount * ENDPOINTS;
  const throughputStart = performance.now();
  await em.fork().transactional(async (tx) => {
    for (let i = 0; i < eventCount; i += 1) recordEvent(tx, org.id, 'contact.created', { contact: { n: i } });
    await tx.flush();
  });
  const countThroughput = () => receiver.requests().filter((r) => r.path.startsWith('/throughput-')).length;
  await waitFor(`${total} deliveries`, () => Promise.resolve(countThroughput() >= total ? true : undefined), 600_000, 20);
  const lastAt = Math.max(...receiver.requests().filter((r) => r.path.startsWith('/throughput-')).map((r) => r.at));
  const deliveryRate = total / ((lastAt - throughputStart) / 1000);
  const share = (deliveryRate / baselineRate) * 100;

  // 3. Latency at RATE events/s.
  const committedAt = new Map<string, number>();
  const latencyEvents = RATE * SECONDS;
  const latencyStart = performance.now();
  const writes: Promise<void>[] = [];
  for (let i = 0; i < latencyEvents; i += 1) {
    const due = latencyStart + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    writes.push(
      em
        .fork()
        .transactional((tx) => Promise.resolve(recordEvent(tx, org.id, 'contact.updated', { n: i })))
        .then((event: Event) => void committedAt.set(event.id, performance.now())),
    );
  }
  await Promise.all(writes);
  await waitFor('the latency deliveries', () => Promise.resolve(receiver.requests('/latency-0').length >= 5 + latencyEvents ? true : undefined), 120_000, 20);
  const latencies = receiver
    .requests('/latency-0')
    .flatMap((r) => {
      const at = committedAt.get(String(r.headers['herald-event-id']));
      return at === undefined ? [] : [r.at - at];
    })
    .sort((a, b) => a - b);
  await orm.close();

  process.stdout.write(
    `bench webhooks-throughput: ${deliveryRate.toFixed(0)} deliveries/s (${total} deliveries to ${ENDPOINTS} endpoints) = ${share.toFixed(0)} % of ${baselineRate.toFixed(0)} plain signed POSTs/s from one process (${CONCURRENCY} in flight)\n`,
  );
  process.stdout.write(
    `bench webhooks-latency: p50 ${percentile(latencies, 0.5).toFixed(0)} ms, p99 ${percentile(latencies, 0.99).toFixed(0)} ms, max ${latencies.at(-1)!.toFixed(0)} ms from commit to first attempt (${latencies.length} events at ${RATE}/s)\n`,
  );
} finally {
  await worker?.stop();
  await receiver.close();
  await temporalServer.stop();
  await dropDatabase(postgres.serverUrl, database).catch((error: unknown) => log(`could not drop ${database}: ${String(error)}`));
  await postgres.stop();
  rmSync(scratch, { recursive: true, force: true });
}
