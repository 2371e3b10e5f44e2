/**
 * Benchmark of a CSV contact import (issue 16): writes a file of `--rows` contacts (default
 * 1,000,000; about 1 % bad rows, 2 % repeated emails, tags and a custom column), stores it in a
 * blob store and runs the import's two passes as the worker's activities run them (validate the
 * whole file, then upsert in batches of 1,000 with their checkpoint), into a scratch database.
 * Prints each pass's time and rows/s, the parse-only time of the same file (csv-parse alone, the
 * floor), and the process's RSS: before, peak during the passes (sampled every 50 ms) and after,
 * so "memory flat" is a figure: the peak must not grow with the file.
 *
 * Registered with the harness (`npm run bench -- contact-import [--contacts=N] [--quick]`: rows
 * from `--contacts`, 100,000 with `--quick`; each run imports the file into a workspace of its
 * own in the benchmark's database), and still a script of its own:
 *
 *   node_modules/.bin/node --expose-gc bench/contact-import.ts [--rows 1000000] [--drop-index NAME …]
 *
 * `--drop-index` drops that index of the scratch database after migrating (repeatable), so an
 * index's cost to the import is the difference between a run with and a run without it.
 *
 * As a script it uses DATABASE_URL's server (or 127.0.0.1:5432, or an embedded PostgreSQL); the
 * scratch database `herald_bench_<pid>` is dropped at the end.
 */
import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { MikroORM } from '@mikro-orm/postgresql';
import { parse } from 'csv-parse';
import { newId } from '../db/ids.ts';
import { migrateUp } from '../db/migrate.ts';
import { createOrm, scopeToOrg } from '../db/orm.ts';
import { ContactImport } from '../db/entities/index.ts';
import { createFsBlobStore } from '../src/blob/fs-blob-store.ts';
import { loadDevEnv } from '../src/config.ts';
import { dropDatabase, ensureDatabase, resolvePostgres, withDatabase } from '../src/dev/postgres.ts';
import { createLogger } from '../src/logger.ts';
import { createContactImportRunner } from '../src/modules/contacts/contact-import.runner.ts';
import type { BenchContext } from './lib/context.ts';
import { fmt, med } from './lib/stats.ts';
import type { Benchmark } from './lib/types.ts';

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Writes the file of `rows` contacts with backpressure. */
async function writeCsv(path: string, rows: number): Promise<void> {
  const out = createWriteStream(path);
  out.write('email,first_name,last_name,company,tags,plan\n');
  for (let i = 1; i <= rows; i += 1) {
    let line: string;
    if (i % 100 === 0) line = `not-an-address-${i},Bad,Row,,,`;
    else {
      const n = i % 50 === 1 && i > 1 ? i - 1 : i;
      line = `person${n}@bench.example,First${i},Last${i},"Company ${i % 997}, Inc","customer;region-${i % 20}",${i % 3 === 0 ? 'pro' : 'free'}`;
    }
    if (!out.write(`${line}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** csv-parse alone over the file: the floor of the validate pass. */
async function parseOnly(file: string): Promise<{ records: number; ms: number }> {
  const started = performance.now();
  let records = 0;
  for await (const _record of createReadStream(file).pipe(parse({ info: true, relax_column_count: true }))) records += 1;
  return { records, ms: performance.now() - started };
}

/** One import of `file` into a new workspace: both passes timed, the process's RSS sampled. */
async function importOnce(orm: MikroORM, file: string, blobDir: string) {
  const blobs = createFsBlobStore(blobDir);
  const orgId = newId();
  const key = `contact-imports/${orgId}/bench.csv`;
  await blobs.put(key, createReadStream(file));
  const em = scopeToOrg(orm.em.fork(), orgId);
  const row = em.create(ContactImport, {
    orgId,
    status: 'validating',
    blobKey: key,
    sizeBytes: statSync(file).size,
    uploadExpiresAt: new Date(Date.now() + 3_600_000),
  });
  await em.flush();
  const target = { orgId, importId: row.id };
  const runner = createContactImportRunner({ orm, blobs, logger: createLogger('silent') });

  global.gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 50);
  let started = performance.now();
  const validated = await runner.validate(target, () => {});
  const validateMs = performance.now() - started;
  started = performance.now();
  const done = await runner.run(target, () => {});
  const importMs = performance.now() - started;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  return { validated, done, validateMs, importMs, before, peak, after: process.memoryUsage().rss };
}

export const benchmark: Benchmark = {
  name: 'contact-import',
  description:
    'A CSV contact import of 1,000,000 rows (1 % invalid, 2 % repeated), both passes as the worker runs them: rows/s against csv-parse alone over the same file, and the peak RSS.',

  async setup(context: BenchContext) {
    const rows = context.options.sizes.contacts ?? (context.options.quick ? 100_000 : 1_000_000);
    const databaseUrl = await context.database();
    const orm = await createOrm({ databaseUrl, poolMax: 2 });
    context.defer(() => orm.close());
    const file = join(context.scratch, 'contacts.csv');
    await writeCsv(file, rows);
    context.log(`file: ${rows} rows, ${mb(statSync(file).size)}`);
    return {
      async warmup() {
        await parseOnly(file);
      },
      async run(index) {
        const floor = await parseOnly(file);
        const result = await importOnce(orm, file, join(context.scratch, `blobs-${index}`));
        const totalMs = result.validateMs + result.importMs;
        context.log(
          `validate ${seconds(result.validateMs)}, import ${seconds(result.importMs)}: created ${result.done.created}, updated ${result.done.updated}, skipped ${result.done.skipped}; RSS peak +${mb(result.peak - result.before)}`,
        );
        return {
          rows,
          rows_per_s: rows / (totalMs / 1000),
          validate_ms: result.validateMs,
          import_ms: result.importMs,
          parse_rows_per_s: floor.records / (floor.ms / 1000),
          rss_peak_growth_mb: (result.peak - result.before) / 1024 / 1024,
        };
      },
      close: () => Promise.resolve(),
    };
  },

  summarize(stats) {
    const rate = med(stats, 'rows_per_s');
    const floor = med(stats, 'parse_rows_per_s');
    return [
      {
        name: 'contact-import',
        figure: `${fmt(med(stats, 'rows'))} rows at ${fmt(rate)} rows/s (validate ${fmt(med(stats, 'validate_ms'))} ms, import ${fmt(med(stats, 'import_ms'))} ms), RSS peak +${fmt(med(stats, 'rss_peak_growth_mb'))} MB`,
        ratio: rate / floor,
        baseline: `csv-parse alone over the file (${fmt(floor)} records/s)`,
      },
    ];
  },
};

/** The script of its own (see the header). */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { rows: { type: 'string', default: '1000000' }, 'drop-index': { type: 'string', multiple: true, default: [] } },
  });
  const rows = Number(values.rows);
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const env = loadDevEnv();
  const scratch = mkdtempSync(join(tmpdir(), 'herald-bench-import-'));
  const postgres = await resolvePostgres({ databaseUrl: env.DATABASE_URL, dataDir: join(scratch, 'pg'), persistent: false, log });
  const database = `herald_bench_${process.pid}`;
  const databaseUrl = withDatabase(postgres.serverUrl, database);
  await ensureDatabase(databaseUrl);
  const orm = await createOrm({ databaseUrl, poolMax: 2 });
  try {
    await migrateUp(orm);
    for (const name of values['drop-index']) {
      if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`--drop-index ${name}: not an index name`);
      await orm.em.getConnection().execute(`drop index "${name}"`);
      log(`dropped index ${name}`);
    }
    const file = join(scratch, 'contacts.csv');
    const started = performance.now();
    await writeCsv(file, rows);
    log(`file: ${rows} rows, ${mb(statSync(file).size)}, written in ${seconds(performance.now() - started)}`);
    const floor = await parseOnly(file);
    log(`baseline, csv-parse alone over the file: ${seconds(floor.ms)} (${Math.round(floor.records / (floor.ms / 1000))} records/s)`);
    const r = await importOnce(orm, file, join(scratch, 'blobs'));
    log(`validate: ${seconds(r.validateMs)} (${Math.round(rows / (r.validateMs / 1000))} rows/s), status ${r.validated.status}`);
    log(
      `import: ${seconds(r.importMs)} (${Math.round(rows / (r.importMs / 1000))} rows/s): created ${r.done.created}, updated ${r.done.updated}, unchanged ${r.done.unchanged}, skipped ${r.done.skipped}`,
    );
    log(
      `bench contact-import: ${rows} rows in ${seconds(r.validateMs + r.importMs)} (${Math.round(rows / ((r.validateMs + r.importMs) / 1000))} rows/s); RSS before ${mb(r.before)}, peak ${mb(r.peak)} (+${mb(r.peak - r.before)}), after ${mb(r.after)}`,
    );
  } finally {
    await orm.close();
    await dropDatabase(postgres.serverUrl, database);
    await postgres.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) await main();
