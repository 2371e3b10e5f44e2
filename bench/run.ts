/**
 * The benchmark harness: `npm run bench` runs every benchmark, `npm run bench -- <name> …`
 * the named ones. See BENCHMARKS.md.
 *
 *   node bench/run.ts [name …] [--runs=3] [--duration=8] [--warmup=3] [--quick] [--profile]
 *                     [--shared-temporal] [--out=bench/results]
 *                     [--contacts=N] [--step-runs=N] [--waiting-runs=N] [--crash-runs=N] [--events=N]
 *
 * The size flags set a benchmark's data set where it reads them (`automations`: contacts
 * imported, runs through non-send steps, runs waiting, runs through the worker's kills;
 * `retention`: email events seeded; `contact-search`: contacts seeded; `contact-import`: rows
 * of the imported file).
 *
 * --shared-temporal runs every benchmark on the one Temporal dev server of the run, as a
 * production stack runs (the server keeps what earlier benchmarks left: closed workflows,
 * idle actors); without it, benchmarks whose figures depend on the server's state get a fresh
 * server each. Results of a shared run are filed as `<name> (shared Temporal)`.
 *
 * --profile runs the processes a benchmark asks to profile (the api; the worker of webhooks)
 * under `node --cpu-prof` (profiles kept in a temporary directory) and writes the summary of
 * each profile to `<out>/<date>-profile-<name>-<process>.txt` instead of the results (the
 * profiler slows the processes, so its figures are not comparable).
 *
 * Starts what the benchmarks need on loopback: a template database migrated once on the
 * PostgreSQL the tests use (DATABASE_URL's server, else 127.0.0.1:5432, else an embedded one),
 * from which each benchmark clones its own; Redis (REDIS_URL, 127.0.0.1:6379 or a spawned
 * redis-server) under a key prefix per benchmark; the Temporal dev server from the cached CLI
 * binary when a benchmark needs it. Each benchmark (`bench/<name>.ts` exporting `benchmark`)
 * starts its own api/worker/smtp child processes, is warmed up, then runs `--runs` times.
 * Prints `bench <name>: <figure> (<ratio> of <baseline>)` lines and writes
 * `<out>/<date>.json` and `<out>/<date>.md`. Exits 1 when a benchmark failed.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { createOrm } from '../db/orm.ts';
import { migrateUp } from '../db/migrate.ts';
import { loadDevEnv } from '../src/config.ts';
import { cacheDir } from '../src/dev/paths.ts';
import { freePort } from '../src/dev/ports.ts';
import { dropDatabase, ensureDatabase, resolvePostgres, withAdminClient, withDatabase } from '../src/dev/postgres.ts';
import { isAlive } from '../src/dev/processes.ts';
import { resolveRedis } from '../src/dev/redis.ts';
import { resolveTemporalBinary } from '../src/dev/temporal-binary.ts';
import { startTemporalDevServer, type TemporalDevServer } from '../src/dev/temporal-server.ts';
import { BenchContext, newEncryptionKey, type HarnessOptions, type SharedServices } from './lib/context.ts';
import { costLines, costModel } from './lib/cost-model.ts';
import { summarizeProfiles } from './lib/profile.ts';
import { summaryLine, writeResults, type BenchmarkResult } from './lib/report.ts';
import { summarizeRuns } from './lib/stats.ts';
import type { Benchmark, Figures } from './lib/types.ts';

/** The processes a benchmark starts whose CPU profiles `--profile` summarizes (`all`: api, worker and smtp in one, as `npm start` runs them). */
const PROFILED_PROCESSES = ['api', 'worker', 'smtp', 'all'] as const;

/** Every benchmark in report order; a name whose file does not exist yet is skipped. */
export const BENCHMARKS = [
  'api-read',
  'api-write',
  'sends',
  'webhooks',
  'inbound',
  'submission',
  'scale',
  'footprint',
  'footprint-start',
  'large-bodies',
  'broadcast',
  'broadcast-one-process',
  'streams',
  'dashboard',
  'automations',
  'retention',
  'destination-shaping',
  'contact-search',
  'contact-import',
] as const;

const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));
const DATABASE_PREFIX = 'herald_bench_';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    runs: { type: 'string', default: '3' },
    duration: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '3' },
    quick: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    'shared-temporal': { type: 'boolean', default: false },
    out: { type: 'string', default: join(BENCH_DIR, 'results') },
    contacts: { type: 'string' },
    'step-runs': { type: 'string' },
    'waiting-runs': { type: 'string' },
    'crash-runs': { type: 'string' },
    events: { type: 'string' },
  },
});

const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

async function loadBenchmark(name: string): Promise<Benchmark | undefined> {
  const file = join(BENCH_DIR, `${name}.ts`);
  if (!existsSync(file)) return undefined;
  const module = (await import(pathToFileURL(file).href)) as { benchmark?: Benchmark };
  if (!module.benchmark) throw new Error(`bench/${name}.ts does not export \`benchmark\``);
  return module.benchmark;
}

/** Drops databases of earlier harness runs whose process is gone (a crash, a Ctrl-C). */
async function dropLeftovers(serverUrl: string): Promise<void> {
  const found = await withAdminClient(serverUrl, (client) =>
    client.query<{ datname: string }>('select datname from pg_database where datname like $1', [`${DATABASE_PREFIX}%`]),
  );
  for (const { datname } of found.rows) {
    const pid = Number(new RegExp(`^${DATABASE_PREFIX}(\\d+)_`).exec(datname)?.[1]);
    if (pid && !isAlive(pid)) await dropDatabase(serverUrl, datname);
  }
}

/** A size flag's count (`--contacts=20000`, `20_000` and `20,000` too), or undefined when absent. */
function sizeFlag(name: 'contacts' | 'step-runs' | 'waiting-runs' | 'crash-runs' | 'events'): number | undefined {
  const text = args[name];
  if (text === undefined) return undefined;
  const count = Number(text.replaceAll(/[_,]/g, ''));
  if (!Number.isInteger(count) || count < 1) {
    process.stderr.write(`--${name} must be a whole number of at least 1, not ${text}\n`);
    process.exit(2);
  }
  return count;
}

const unknown = positionals.filter((name) => !(BENCHMARKS as readonly string[]).includes(name));
if (unknown.length > 0) {
  process.stderr.write(`unknown benchmark ${unknown.join(', ')}; known: ${BENCHMARKS.join(', ')}\n`);
  process.exit(2);
}
const options: HarnessOptions = {
  runs: Number(args.runs),
  durationSec: Number(args.duration),
  warmupSec: Number(args.warmup),
  quick: args.quick,
  profileDir: null,
  sizes: {
    contacts: sizeFlag('contacts'),
    stepRuns: sizeFlag('step-runs'),
    waitingRuns: sizeFlag('waiting-runs'),
    crashRuns: sizeFlag('crash-runs'),
    events: sizeFlag('events'),
  },
};
if (options.runs < 3) log(`--runs=${options.runs}: fewer than 3 runs give no meaningful spread`);

const selected: { name: string; benchmark: Benchmark }[] = [];
for (const name of positionals.length > 0 ? positionals : BENCHMARKS) {
  const benchmark = await loadBenchmark(name);
  if (benchmark) selected.push({ name, benchmark });
  else log(`${name}: bench/${name}.ts does not exist yet, skipped`);
}

const started = performance.now();
const date = new Date().toISOString().slice(0, 10);
const scratch = mkdtempSync(join(tmpdir(), 'herald-bench-'));
if (args.profile) {
  options.profileDir = mkdtempSync(join(tmpdir(), 'herald-bench-profiles-'));
  log(`CPU profiles go to ${options.profileDir}`);
}
const dev = loadDevEnv();
const postgres = await resolvePostgres({ databaseUrl: dev.DATABASE_URL, dataDir: scratch, persistent: false, log });
const redis = await resolveRedis({ redisUrl: dev.REDIS_URL, dataDir: scratch, path: dev.PATH, log });
const runId = String(process.pid);
const templateDatabase = `${DATABASE_PREFIX}${runId}_template`;
let temporal: Promise<TemporalDevServer> | undefined;

const services: SharedServices = {
  pgServerUrl: postgres.serverUrl,
  templateDatabase,
  redisUrl: redis.url,
  encryptionKey: newEncryptionKey(),
  runId,
  async temporal() {
    temporal ??= startTemporal();
    const server = await temporal;
    return { address: server.address, namespace: server.namespace, pid: server.service.child.pid! };
  },
  async startTemporal() {
    const server = await startTemporal();
    return { address: server.address, namespace: server.namespace, pid: server.service.child.pid!, stop: () => server.stop() };
  },
};

let temporalServers = 0;
/** An in-memory Temporal dev server from the cached CLI binary, headless, on a free port. */
async function startTemporal(): Promise<TemporalDevServer> {
  const binary = resolveTemporalBinary({ explicit: dev.TEMPORAL_BIN, cacheDir: cacheDir(dev), path: dev.PATH, log });
  temporalServers += 1;
  log('starting a Temporal dev server');
  return startTemporalDevServer({
    binary,
    port: await freePort(),
    uiPort: null,
    dbFile: null,
    namespace: 'herald-bench',
    logFile: join(scratch, `temporal-${temporalServers}.log`),
  });
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    log(`${signal}: stopping after the current step`);
  });
}

const results: Record<string, BenchmarkResult> = {};
let failed = false;
try {
  await dropLeftovers(postgres.serverUrl);
  const templateUrl = withDatabase(postgres.serverUrl, templateDatabase);
  await ensureDatabase(templateUrl);
  const orm = await createOrm({ databaseUrl: templateUrl, poolMax: 1 });
  await migrateUp(orm);
  await orm.close();

  for (const { name, benchmark } of selected) {
    if (interrupted) break;
    const sharedTemporal = args['shared-temporal'] && benchmark.needsTemporal === 'own';
    const context = new BenchContext(name, options, services, sharedTemporal ? true : (benchmark.needsTemporal ?? false));
    const benchStarted = performance.now();
    const runs: Figures[] = [];
    let error: string | undefined;
    log(`${name}: ${benchmark.description}`);
    try {
      const session = await benchmark.setup(context);
      context.defer(() => session.close());
      await session.warmup();
      for (let i = 0; i < options.runs && !interrupted; i += 1) {
        const figures = await session.run(i);
        log(
          `${name} run ${i + 1}/${options.runs}: ${Object.entries(figures)
            .map(([k, v]) => `${k}=${Math.round(v * 100) / 100}`)
            .join(' ')}`,
        );
        runs.push(figures);
      }
    } catch (caught) {
      error = caught instanceof Error ? (caught.stack ?? caught.message) : String(caught);
      failed = true;
      log(`${name} failed: ${error}`);
    } finally {
      await context.close();
    }
    if (options.profileDir) {
      for (const kind of PROFILED_PROCESSES) {
        for (const profile of summarizeProfiles(join(options.profileDir, `${name}-${kind}`))) {
          context.note(`CPU profile of the ${kind} (${profile.file})`, profile.summary);
        }
      }
    }
    const stats = summarizeRuns(runs);
    const summaries = (error || runs.length === 0 ? [] : benchmark.summarize(stats)).map((summary) =>
      sharedTemporal ? { ...summary, name: `${summary.name} (shared Temporal)` } : summary,
    );
    for (const summary of summaries) process.stdout.write(`${summaryLine(summary)}\n`);
    if (error) process.stdout.write(`bench ${name}: failed (${error.split('\n')[0]})\n`);
    results[sharedTemporal ? `${name} (shared Temporal)` : name] = {
      description: sharedTemporal ? `${benchmark.description} On the run's shared Temporal dev server.` : benchmark.description,
      finishedAt: new Date().toISOString(),
      seconds: (performance.now() - benchStarted) / 1000,
      runs,
      stats,
      summaries,
      notes: context.notes,
      ...(error ? { error } : {}),
    };
  }
} finally {
  if (temporal) await (await temporal.catch(() => undefined))?.stop();
  await dropDatabase(postgres.serverUrl, templateDatabase).catch((error: unknown) =>
    log(`could not drop ${templateDatabase}: ${String(error)}`),
  );
  await redis.service?.stop();
  await postgres.stop();
  rmSync(scratch, { recursive: true, force: true });
}

if (options.profileDir) {
  mkdirSync(args.out, { recursive: true });
  for (const [name, result] of Object.entries(results)) {
    for (const kind of PROFILED_PROCESSES) {
      // One file per process; a worker's threads (Temporal's workflow threads) each have a profile.
      const notes = result.notes.filter((n) => n.title.startsWith(`CPU profile of the ${kind} `));
      if (notes.length === 0) continue;
      const text = notes.map((note) => `${note.title}\n\n${note.text}\n`).join('\n');
      writeFileSync(join(args.out, `${date}-profile-${name}-${kind}.txt`), text);
      process.stdout.write(`\n${name}:\n${text}`);
    }
  }
  log(`profiled figures are not written to the results (the profiler slows the api); profile summaries in ${args.out}`);
} else if (Object.keys(results).length > 0) {
  for (const line of costLines(costModel(results))) process.stdout.write(`${line}\n`);
  const written = writeResults(
    args.out,
    {
      date,
      machine: { cpus: availableParallelism(), node: process.version, loadAverage: loadavg() },
      options: {
        runs: options.runs,
        durationSec: options.durationSec,
        warmupSec: options.warmupSec,
        quick: options.quick,
        ...Object.fromEntries(Object.entries(options.sizes).filter(([, count]) => count !== undefined)),
      },
      benchmarks: results,
    },
    BENCHMARKS,
  );
  log(`wrote ${written.json} and ${written.markdown} in ${Math.round((performance.now() - started) / 1000)} s`);
}
process.exitCode = failed || interrupted ? 1 : 0;
