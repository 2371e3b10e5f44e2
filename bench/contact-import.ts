/**
 * Benchmark of a CSV contact import (issue 16): writes a file of `--rows` contacts (default
 * 1,000,000; about 1 % bad rows, 2 % repeated emails, tags and a custom column), stores it in a
 * blob store and runs the import's two passes as the worker's activities run them (validate the
 * whole file, then upsert in batches of 1,000 with their checkpoint), into a scratch database.
 * Prints each pass's time and rows/s, the parse-only time of the same file (csv-parse alone, the
 * floor), and the process's RSS: before, peak during the passes (sampled every 50 ms) and after,
 * so "memory flat" is a figure: the peak must not grow with the file.
 *
 *   node_modules/.bin/node bench/contact-import.ts [--rows 1000000] [--drop-index NAME …]
 *
 * `--drop-index` drops that index of the scratch database after migrating (repeatable), so an
 * index's cost to the import is the difference between a run with and a run without it.
 *
 * Uses DATABASE_URL's server (or 127.0.0.1:5432, or an embedded PostgreSQL); the scratch
 * database `herald_bench_<pid>` is dropped at the end.
 */
import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
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

const { values } = parseArgs({
  options: { rows: { type: 'string', default: '1000000' }, 'drop-index': { type: 'string', multiple: true, default: [] } },
});
const ROWS = Number(values.rows);
/** Indexes of `contacts` dropped after migrating, to measure what each costs the import (`--drop-index NAME`, repeatable). */
const DROPPED = values['drop-index'];
const log = (line: string) => process.stdout.write(`${line}\n`);
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Writes the file with backpressure; returns its path. */
async function writeCsv(path: string): Promise<void> {
  const out = createWriteStream(path);
  out.write('email,first_name,last_name,company,tags,plan\n');
  for (let i = 1; i <= ROWS; i += 1) {
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

const env = loadDevEnv();
const scratch = mkdtempSync(join(tmpdir(), 'herald-bench-import-'));
const postgres = await resolvePostgres({ databaseUrl: env.DATABASE_URL, dataDir: join(scratch, 'pg'), persistent: false, log });
const database = `herald_bench_${process.pid}`;
const databaseUrl = withDatabase(postgres.serverUrl, database);
await ensureDatabase(databaseUrl);
const orm = await createOrm({ databaseUrl, poolMax: 2 });
try {
  await migrateUp(orm);
  for (const name of DROPPED) {
    if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`--drop-index ${name}: not an index name`);
    await orm.em.getConnection().execute(`drop index "${name}"`);
    log(`dropped index ${name}`);
  }
  const file = join(scratch, 'contacts.csv');
  let started = performance.now();
  await writeCsv(file);
  const size = statSync(file).size;
  log(`file: ${ROWS} rows, ${mb(size)}, written in ${seconds(performance.now() - started)}`);

  started = performance.now();
  let parsed = 0;
  for await (const _record of createReadStream(file).pipe(parse({ info: true, relax_column_count: true }))) parsed += 1;
  const parseMs = performance.now() - started;
  log(`baseline, csv-parse alone over the file: ${seconds(parseMs)} (${Math.round(parsed / (parseMs / 1000))} records/s)`);

  const blobs = createFsBlobStore(join(scratch, 'blobs'));
  const orgId = newId();
  const key = `contact-imports/${orgId}/bench.csv`;
  await blobs.put(key, createReadStream(file));
  const em = scopeToOrg(orm.em.fork(), orgId);
  const row = em.create(ContactImport, {
    orgId,
    status: 'validating',
    blobKey: key,
    sizeBytes: size,
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
  started = performance.now();
  const validated = await runner.validate(target, () => {});
  const validateMs = performance.now() - started;
  started = performance.now();
  const done = await runner.run(target, () => {});
  const importMs = performance.now() - started;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);

  log(`validate: ${seconds(validateMs)} (${Math.round(ROWS / (validateMs / 1000))} rows/s), status ${validated.status}`);
  log(
    `import: ${seconds(importMs)} (${Math.round(ROWS / (importMs / 1000))} rows/s): created ${done.created}, updated ${done.updated}, unchanged ${done.unchanged}, skipped ${done.skipped}`,
  );
  log(
    `bench contact-import: ${ROWS} rows in ${seconds(validateMs + importMs)} (${Math.round(ROWS / ((validateMs + importMs) / 1000))} rows/s); RSS before ${mb(before)}, peak ${mb(peak)} (+${mb(peak - before)}), after ${mb(process.memoryUsage().rss)}`,
  );
} finally {
  await orm.close();
  await dropDatabase(postgres.serverUrl, database);
  await postgres.stop();
  rmSync(scratch, { recursive: true, force: true });
}
