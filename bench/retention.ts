/**
 * Retention: how fast the retention loop's batched deletes empty the largest table, and what
 * they cost an API read running beside them. Each run seeds `--events` email events (default
 * 1,000,000; 100,000 with --quick; the 10,000,000 with `--events=10000000`) spread over
 * the last 180 days with time-ordered ids, as the pipeline writes them, plus their daily rollup;
 * then measures GET /api/v1/metrics?period=90d (10 connections) for `--duration` seconds alone,
 * then again while `runRetention` (RETENTION_EMAILS_DAYS=90, batches of RETENTION_BATCH_SIZE,
 * 1000 by default) deletes the half older than 90 days. Figures: rows deleted per second, the
 * longest single deleting transaction (the longest any row lock was held), the read's p50/p99
 * alone and beside the deletes; the metrics answer must be the same before and after.
 */
import { createOrm } from '../db/orm.ts';
import { runRetention } from '../src/modules/retention/retention.ts';
import type { BenchContext } from './lib/context.ts';
import { runHttpLoad } from './lib/load.ts';
import { withClient } from './lib/seed.ts';
import { fmt, med } from './lib/stats.ts';
import type { Benchmark, Figures } from './lib/types.ts';

const CONNECTIONS = 10;
const SPREAD_DAYS = 180;
const RETENTION_DAYS = 90;
const BATCH_SIZE = 1000;
const METRICS_PATH = '/api/v1/metrics?period=90d';

/** Events with ids that begin with their creation second (db/ids.ts), one every SPREAD_DAYS/$2, emails long gone. */
const SEED_SQL = `
  insert into email_events (id, org_id, type, email_id, broadcast_id, recipient, domain, occurred_at, created_at)
  select lpad(to_hex(extract(epoch from at)::bigint), 8, '0') || lpad(to_hex(g), 16, '0'), $1,
         (array['sent', 'delivered', 'opened', 'clicked', 'bounced'])[1 + g % 5]::text,
         lpad(to_hex(g / 3), 24, '0'), null, 'user' || (g % 50000) || '@example.com', 'bench.test', at, at
    from generate_series(1, $2::int) as g,
         lateral (select now() - (g::double precision / $2) * make_interval(days => $3) as at) as t`;

const ROLLUP_SQL = `
  insert into email_event_counts (org_id, day, broadcast_id, domain, type, count)
  select org_id, (occurred_at at time zone 'UTC')::date, '', domain, type, count(*) from email_events group by 1, 2, 3, 4, 5`;

async function seed(databaseUrl: string, orgId: string, events: number): Promise<void> {
  await withClient(databaseUrl, async (client) => {
    await client.query('truncate email_events, email_event_counts');
    await client.query(SEED_SQL, [orgId, events, SPREAD_DAYS]);
    await client.query(ROLLUP_SQL);
    await client.query('vacuum analyze email_events, email_event_counts');
  });
}

export const benchmark: Benchmark = {
  name: 'retention',
  description: `Batched deletes of email events past ${RETENTION_DAYS} days (half of a seeded table), rows/s and the longest transaction, with GET ${METRICS_PATH} (${CONNECTIONS} connections) alone and beside them.`,

  async setup(context: BenchContext) {
    const events = context.options.sizes.events ?? (context.options.quick ? 100_000 : 1_000_000);
    const databaseUrl = await context.database();
    const workspace = await context.workspace(databaseUrl);
    const api = await context.start('api', await context.env(databaseUrl));
    const orm = await createOrm({ databaseUrl, poolMax: 2 });
    context.defer(() => orm.close());
    const headers = { Authorization: `Bearer ${workspace.key}` };
    const read = (durationSec: number) => runHttpLoad({ url: `${api.url}${METRICS_PATH}`, headers, connections: CONNECTIONS, durationSec });
    const metrics = async () => {
      const response = await fetch(`${api.url}${METRICS_PATH}`, { headers });
      if (response.status !== 200) throw new Error(`GET ${METRICS_PATH} answered ${response.status}: ${await response.text()}`);
      return JSON.stringify(((await response.json()) as { data: unknown }).data);
    };
    const { durationSec, warmupSec } = context.options;

    return {
      async warmup() {
        await read(warmupSec);
      },
      async run(): Promise<Figures> {
        const seeding = performance.now();
        await seed(databaseUrl, workspace.orgId, events);
        context.log(`seeded ${events} email events in ${fmt((performance.now() - seeding) / 1000)} s`);
        const before = await metrics();
        const alone = await read(durationSec);

        let longestMs = 0;
        let batches = 0;
        const started = performance.now();
        const deleting = runRetention(
          {
            orm,
            blobs: null,
            policy: { days: { emails: RETENTION_DAYS, webhooks: 0, inbound: 0, contactImports: 0 }, batchSize: BATCH_SIZE },
          },
          {
            onBatch: (_table, _deleted, ms) => {
              longestMs = Math.max(longestMs, ms);
              batches += 1;
            },
          },
        );
        const beside = await read(durationSec);
        const readEndedSec = (performance.now() - started) / 1000;
        const deleted = (await deleting).email_events ?? 0;
        const seconds = (performance.now() - started) / 1000;
        if ((await metrics()) !== before) throw new Error('GET /metrics changed after the deletes');
        return {
          events_seeded: events,
          deleted,
          rows_per_s: deleted / seconds,
          delete_seconds: seconds,
          batches,
          longest_transaction_ms: longestMs,
          deletes_outlasted_read: seconds >= readEndedSec ? 1 : 0,
          read_alone_p50_ms: alone.p50Ms,
          read_alone_p99_ms: alone.p99Ms,
          read_alone_rps: alone.rps,
          read_beside_p50_ms: beside.p50Ms,
          read_beside_p99_ms: beside.p99Ms,
          read_beside_rps: beside.rps,
        };
      },
      close: () => Promise.resolve(),
    };
  },

  summarize(stats) {
    const rate = med(stats, 'rows_per_s');
    return [
      {
        name: 'retention',
        figure: `${fmt(med(stats, 'deleted'))} of ${fmt(med(stats, 'events_seeded'))} email events deleted at ${fmt(rate)} rows/s in batches of ${BATCH_SIZE}, longest transaction ${fmt(med(stats, 'longest_transaction_ms'))} ms`,
        ratio: rate / 35,
        baseline: 'a busy platform writing 3 million events a day (35/s)',
      },
      {
        name: 'retention-read',
        figure: `GET ${METRICS_PATH} beside the deletes: p50 ${fmt(med(stats, 'read_beside_p50_ms'))} ms, p99 ${fmt(med(stats, 'read_beside_p99_ms'))} ms, ${fmt(med(stats, 'read_beside_rps'))} req/s`,
        ratio: med(stats, 'read_beside_rps') / med(stats, 'read_alone_rps'),
        baseline: `the same read alone: p50 ${fmt(med(stats, 'read_alone_p50_ms'))} ms, p99 ${fmt(med(stats, 'read_alone_p99_ms'))} ms, ${fmt(med(stats, 'read_alone_rps'))} req/s`,
      },
    ];
  },
};
