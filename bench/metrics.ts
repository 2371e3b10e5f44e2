/**
 * Benchmark of GET /api/v1/metrics?period=90d over a workspace with 1,000,000 email events.
 *
 *   node_modules/.bin/node bench/metrics.ts [--events=1000000] [--runs=20] [--period=90d] [--keep]
 *
 * Builds a scratch database from the migrations (on the PostgreSQL the tests use: DATABASE_URL's
 * server, else 127.0.0.1:5432, else an embedded one), seeds the events over the last 120 days
 * with one INSERT … SELECT over generate_series and their daily rollup (email_event_counts) with
 * the migration's backfill, vacuums and analyzes (what autovacuum does after a bulk load), starts the api, warms up, then times sequential requests and prints
 * `bench metrics-90d: <median> ms (p95 <x> ms)`. The scratch database is dropped at the end
 * (kept with --keep, for EXPLAIN; its URL is printed).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { migrateUp } from '../db/migrate.ts';
import { createOrm } from '../db/orm.ts';
import { loadConfig, loadDevEnv } from '../src/config.ts';
import { dropDatabase, ensureDatabase, resolvePostgres, withDatabase } from '../src/dev/postgres.ts';
import { resolveRedis } from '../src/dev/redis.ts';
import { createLogger } from '../src/logger.ts';
import { startApi } from '../src/main-api.ts';
import { createApiKeysService } from '../src/modules/auth/api-keys.service.ts';
import { createOrgsService } from '../src/modules/orgs/orgs.service.ts';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '20' },
    period: { type: 'string', default: '90d' },
    warmup: { type: 'string', default: '3' },
    keep: { type: 'boolean', default: false },
  },
});
const EVENTS = Number(args.events);
const RUNS = Number(args.runs);
const WARMUP = Number(args.warmup);
const PERIOD = args.period;
const SEED_DAYS = 120;
const BROADCASTS = 300;
const CONTACTS = 50_000;
const DOMAINS = ['mail.bench.test', 'news.bench.test', 'bench.test'];

const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

/** The events: 20 % transactional, the rest spread over 300 broadcasts in time order. */
const SEED_EVENTS_SQL = `
  insert into email_events (id, org_id, type, email_id, broadcast_id, recipient, domain, occurred_at, created_at)
  select lpad(to_hex(g), 24, '0'),
         $1,
         case when r < 35 then 'sent' when r < 67 then 'delivered' when r < 85 then 'opened'
              when r < 93 then 'clicked' when r < 96 then 'bounced' when r < 97 then 'complained'
              else 'unsubscribed' end,
         lpad(to_hex(g / 3), 24, '0'),
         case when g % 5 = 0 then null
              else 'b' || lpad(to_hex(((g - 1)::bigint * $4 / $2)::int), 23, '0') end,
         'user' || (g * 31 % 200000) || '@example.com',
         ($5::text[])[1 + g % 3],
         now() - (g::double precision / $2) * make_interval(days => $3),
         now()
    from generate_series(1, $2::int) as g,
         lateral (select (g::bigint * 7919) % 100 as r) as pick`;

/** The daily rollup of those events: the backfill of the migration that created email_event_counts. */
const SEED_COUNTS_SQL = `
  insert into email_event_counts (org_id, day, broadcast_id, domain, type, count)
  select org_id, (occurred_at at time zone 'UTC')::date, coalesce(broadcast_id, ''), domain, type, count(*)
    from email_events
   group by 1, 2, 3, 4, 5`;

const SEED_BROADCASTS_SQL = `
  insert into broadcasts (id, org_id, name, subject, from_name, from_email, segment_ids, status, metrics, created_at, updated_at)
  select 'b' || lpad(to_hex(i), 23, '0'), $1, 'Campaign ' || i, 'Subject ' || i, 'Bench', 'news@bench.test',
         '{}', 'sent', '{}', now() - make_interval(days => $3) + i * make_interval(days => $3) / $2, now()
    from generate_series(0, $2::int - 1) as i`;

const SEED_CONTACTS_SQL = `
  insert into contacts (id, org_id, email, tags, status, created_at, updated_at)
  select 'c' || lpad(to_hex(i), 23, '0'), $1, 'user' || i || '@example.com', '{}',
         case when i % 20 = 0 then 'unsubscribed' when i % 50 = 1 then 'bounced'
              when i % 200 = 2 then 'complained' else 'active' end,
         now(), now()
    from generate_series(1, $2::int) as i`;

const SEED_DOMAINS_SQL = `
  insert into domains (id, org_id, domain, status, is_default, source, dkim_selector, dkim_public_key,
                       dkim_private_key_encrypted, reputation_state, dns_check, created_at, updated_at)
  select 'd' || lpad(to_hex(i), 23, '0'), $1, ($2::text[])[i], 'verified', i = 1, 'operator', 'herald', 'bench', 'bench',
         'healthy', '{}', now(), now()
    from generate_series(1, cardinality($2::text[])) as i`;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}

function median(sorted: number[]): number {
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const dev = loadDevEnv();
const scratch = mkdtempSync(join(tmpdir(), 'herald-bench-'));
const postgres = await resolvePostgres({ databaseUrl: dev.DATABASE_URL, dataDir: scratch, persistent: false, log });
const database = `herald_bench_metrics_${process.pid}`;
const databaseUrl = withDatabase(postgres.serverUrl, database);
const redis = await resolveRedis({ redisUrl: dev.REDIS_URL, dataDir: scratch, path: dev.PATH, log });

try {
  await ensureDatabase(databaseUrl);
  const orm = await createOrm({ databaseUrl, poolMax: 2 });
  await migrateUp(orm);
  const { org } = await createOrgsService({ orm }).createOrganization({ name: `Bench ${process.pid}` });
  const { key } = await createApiKeysService({ orm }).createApiKey({
    orgId: org.id,
    scopes: ['metrics:read'],
    rateLimitPerMinute: 1_000_000,
    burst: 100_000,
  });
  await orm.close();

  const client = new pg.Client({ connectionString: databaseUrl });
  client.on('error', (error) => log(`seed connection: ${error.message}`));
  await client.connect();
  try {
    let started = performance.now();
    await client.query(SEED_DOMAINS_SQL, [org.id, DOMAINS]);
    await client.query(SEED_BROADCASTS_SQL, [org.id, BROADCASTS, SEED_DAYS]);
    await client.query(SEED_CONTACTS_SQL, [org.id, CONTACTS]);
    await client.query(SEED_EVENTS_SQL, [org.id, EVENTS, SEED_DAYS, BROADCASTS, DOMAINS]);
    await client.query(SEED_COUNTS_SQL);
    log(`seeded ${EVENTS} events over ${SEED_DAYS} days, ${BROADCASTS} broadcasts, ${CONTACTS} contacts in ${Math.round(performance.now() - started)} ms`);
    started = performance.now();
    await client.query('vacuum analyze');
    log(`vacuum analyze in ${Math.round(performance.now() - started)} ms`);
  } finally {
    await client.end();
  }

  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    DATABASE_URL: databaseUrl,
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: `herald-bench:${process.pid}:`,
    PORT: '0',
    HOST: '127.0.0.1',
    HERALD_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  });
  const api = await startApi(config, createLogger('silent'));
  try {
    const url = `${api.url}/api/v1/metrics?period=${encodeURIComponent(PERIOD)}`;
    const request = async (): Promise<number> => {
      const t0 = performance.now();
      const response = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
      const body = (await response.json()) as { data?: { summary?: { sent: number } } };
      const elapsed = performance.now() - t0;
      if (response.status !== 200) throw new Error(`GET /metrics answered ${response.status}: ${JSON.stringify(body)}`);
      return elapsed;
    };
    for (let i = 0; i < WARMUP; i += 1) await request();
    const times: number[] = [];
    for (let i = 0; i < RUNS; i += 1) times.push(await request());
    times.sort((a, b) => a - b);
    const sample = (await (await fetch(url, { headers: { authorization: `Bearer ${key}` } })).json()) as { data: { summary: unknown } };
    log(`summary: ${JSON.stringify(sample.data.summary)}`);
    process.stdout.write(
      `bench metrics-${PERIOD}: ${median(times).toFixed(1)} ms (p95 ${percentile(times, 0.95).toFixed(1)} ms)\n`,
    );
  } finally {
    await api.close();
  }
} finally {
  if (args.keep) log(`kept ${databaseUrl}`);
  else await dropDatabase(postgres.serverUrl, database).catch((error: unknown) => log(`could not drop ${database}: ${String(error)}`));
  await redis.service?.stop();
  await postgres.stop();
  rmSync(scratch, { recursive: true, force: true });
}
