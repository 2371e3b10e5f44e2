/**
 * Benchmark of GET /segments' live member counts. Seeds 100,000 contacts (plus 20,000 of
 * another workspace, which must not be counted) into a scratch database, creates 50 distinct
 * segments from very broad to very narrow, and times through the real service:
 * - `listSegments` for a page of 50 (the keyset page plus its one counting statement), and
 *   prints the plan of that counting statement;
 * - `createSegment` (insert plus the count of one segment), for a broad and a narrow tag.
 *
 *   node_modules/.bin/node bench/segments-count.ts [--contacts 100000] [--runs 30]
 *
 * Uses DATABASE_URL's server (or 127.0.0.1:5432, or an embedded PostgreSQL). The scratch
 * database `herald_bench_<pid>` is dropped at the end; dev data is never touched. Timings
 * are wall-clock from Node, so they include the round trips.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { newId } from '../db/ids.ts';
import { migrateUp } from '../db/migrate.ts';
import { createOrm } from '../db/orm.ts';
import { workspaceDb } from '../db/workspace-db.ts';
import { loadDevEnv } from '../src/config.ts';
import { dropDatabase, ensureDatabase, resolvePostgres, withDatabase } from '../src/dev/postgres.ts';
import { segmentCountQuery } from '../src/modules/segments/segments.repo.ts';
import { createSegmentsService } from '../src/modules/segments/segments.service.ts';

const { values } = parseArgs({ options: { contacts: { type: 'string', default: '100000' }, runs: { type: 'string', default: '30' } } });
const CONTACTS = Number(values.contacts);
const NOISE = Math.round(CONTACTS / 5);
const RUNS = Number(values.runs);
const WARMUP = 3;

/**
 * Contacts with 3 to 6 tags: `customer` on 60 %, `newsletter` on 30 %, `vip` on 2 %, one of
 * 20 `region-*` (5 % each), one of 1,000 `cohort-*` (0.1 % each) and a tag of its own
 * (`uid-*`), so no two contacts share a tag set. About 1 in 17 is unsubscribed.
 */
const SEED_SQL = `
  insert into contacts (id, org_id, email, tags, status, created_at, updated_at)
  select substr(md5(?::text || i::text), 1, 24), ?, 'c' || i || '@bench.example',
    array_remove(array[
      case when i % 5 < 3 then 'customer' end,
      case when i % 10 < 3 then 'newsletter' end,
      case when i % 50 = 0 then 'vip' end,
      'region-' || (i % 20),
      'cohort-' || (i % 1000),
      'uid-' || i
    ], null),
    case when i % 17 = 0 then 'unsubscribed' else 'active' end,
    now() - i * interval '1 second', now()
  from generate_series(1, ?) as i`;

/** 50 distinct segments: broad, medium, pairs, narrow, absent tags and one `all`. */
function segmentDefinitions(): string[][] {
  const definitions: string[][] = [
    ['customer'],
    ['newsletter'],
    ['customer', 'newsletter'],
    ['vip'],
    ['vip', 'newsletter'],
    [],
    ['no-such-tag'],
  ];
  for (let r = 0; r < 20; r += 1) definitions.push([`region-${r}`]);
  for (let r = 0; r < 10; r += 1) definitions.push([`region-${r}`, `region-${r + 10}`]);
  for (let c = 0; definitions.length < 50; c += 1) definitions.push([`cohort-${c * 37}`]);
  return definitions;
}

const log = (line: string) => process.stdout.write(`${line}\n`);
const ms = (value: number) => `${value.toFixed(1)} ms`;

function summary(samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return `min ${ms(sorted[0]!)}  median ${ms(at(0.5))}  p95 ${ms(at(0.95))}  max ${ms(sorted.at(-1)!)}  (${samples.length} runs)`;
}

async function time(runs: number, fn: () => Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let run = 0; run < WARMUP + runs; run += 1) {
    const started = performance.now();
    await fn();
    if (run >= WARMUP) samples.push(performance.now() - started);
  }
  return samples;
}

const env = loadDevEnv();
const scratch = mkdtempSync(join(tmpdir(), 'herald-bench-'));
const postgres = await resolvePostgres({ databaseUrl: env.DATABASE_URL, dataDir: scratch, persistent: false, log });
const database = `herald_bench_${process.pid}`;
const databaseUrl = withDatabase(postgres.serverUrl, database);
await ensureDatabase(databaseUrl);
const orm = await createOrm({ databaseUrl, poolMax: 2 });
try {
  await migrateUp(orm);
  const orgId = newId();
  const em = orm.em.fork();

  const seeding = performance.now();
  await em.execute(SEED_SQL, [orgId, orgId, CONTACTS]);
  await em.execute(SEED_SQL, [newId(), newId(), NOISE]);
  await em.execute('vacuum analyze contacts');
  log(`seeded ${CONTACTS} contacts (+${NOISE} in another workspace) in ${ms(performance.now() - seeding)}`);

  const segments = createSegmentsService({ orm });
  const counts: string[] = [];
  for (const [i, tags] of segmentDefinitions().entries()) {
    const { contactCount } = await segments.createSegment(orgId, { name: `bench ${i}`, description: '', tags });
    counts.push(`${tags.length ? tags.join('|') : '(all)'}=${contactCount}`);
  }
  await em.execute('vacuum analyze segments');
  log(`segment sizes: ${counts.join(', ')}`);

  const listSamples = await time(RUNS, async () => {
    const page = await segments.listSegments(orgId, { limit: 50 });
    if (page.items.length !== 50) throw new Error(`expected a page of 50 segments, got ${page.items.length}`);
  });
  log(`GET /segments, a page of 50 with live counts: ${summary(listSamples)}`);

  const page = await segments.listSegments(orgId, { limit: 50 });
  const counting = segmentCountQuery(
    workspaceDb(orm.em.fork(), orgId),
    page.items.map((segment) => segment.id),
  );
  const plan = await counting.explain<{ 'QUERY PLAN': string }>(undefined, sql`analyze, costs off`);
  log("plan of the page's counting statement:");
  for (const row of plan) log(`  ${row['QUERY PLAN'].slice(0, 200)}`);

  let n = 0;
  const broad = await time(Math.min(RUNS, 10), () =>
    segments.createSegment(orgId, { name: `broad ${(n += 1)}`, description: '', tags: ['customer'] }),
  );
  log(`POST /segments, tag on 60 % of contacts: ${summary(broad)}`);
  const narrow = await time(Math.min(RUNS, 10), () =>
    segments.createSegment(orgId, { name: `narrow ${(n += 1)}`, description: '', tags: ['cohort-7'] }),
  );
  log(`POST /segments, tag on 0.1 % of contacts: ${summary(narrow)}`);
} finally {
  await orm.close();
  await dropDatabase(postgres.serverUrl, database);
  await postgres.stop();
  rmSync(scratch, { recursive: true, force: true });
}
