import { ConfigError, type Config } from '../config.ts';
import type { Logger } from '../logger.ts';

/** A start refused for a reason outside the configuration (a service unreachable): one line, exit 1. */
export class StartRefused extends Error {}

/** Herald's api, worker and/or smtp, started in this process. */
export interface RunningHerald {
  /** Stops the listeners first (no new work), then the worker, then the shared ORM. */
  stop: () => Promise<void>;
  /** Settles when the worker stops (by `stop`, or on its own: a fatal error); null without a worker. */
  done: Promise<void> | null;
}

/**
 * Refuses to start when the encryption key ring cannot open the database's sealed values
 * (docs/troubleshooting.md); the first start with a key records which key that is.
 */
export async function checkEncryptionKeyAtStart(config: Config, logger: Logger): Promise<void> {
  const { createOrm } = await import('../../db/orm.ts');
  const { checkEncryptionKey } = await import('../modules/encryption/encryption.service.ts');
  const orm = await createOrm({ databaseUrl: config.database.url, poolMax: 1 });
  try {
    const result = await checkEncryptionKey(orm.em.fork(), config.encryptionKeys);
    if (result.olderKeyInUse) {
      logger.warn('sealed values remain under an older encryption key: run `herald admin encryption re-encrypt`, then drop it', {
        keyId: result.checkedKeyId,
      });
    }
  } catch (error) {
    if ((error as Error).name === 'TableNotFoundException') {
      throw new ConfigError(['DATABASE_URL: the database is not migrated (no encryption_key_checks table): run `herald migrate` first']);
    }
    if (error instanceof ConfigError) throw error;
    throw new StartRefused(
      `cannot start: PostgreSQL at DATABASE_URL cannot be used (${(error as Error).message}); is it running and reachable, and are the credentials right?`,
    );
  } finally {
    await orm.close();
  }
}

/**
 * One memory-reducing full collection (V8's "last resort" collection, which also gives the young
 * generation back down to its initial size), when `gc` is exposed (--expose-gc: src/dev/paths.ts
 * nodeFlagsFor and src/cli/herald.mjs give it); without it, nothing. Start-up (modules compiled,
 * the ORM's metadata, the worker's set-up) and any burst of work grow the young generation to its
 * cap (--max-semi-space-size), and V8 keeps it until its memory reducer runs, if ever: with a
 * 32 MB cap the all-in-one process idled at ~300 MB instead of ~225 after start
 * (BENCHMARKS.md, 2026-11-28 10:39).
 */
export function releaseMemory(): void {
  globalThis.gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

/** How often the event loop's load is read: a load that has just begun shows in the next reading. */
const SAMPLE_MS = 1_000;
/** Readings in a row under IDLE_UTILIZATION that make an idle stretch. */
const IDLE_SAMPLES = 5;
/** A reading at least this busy (event-loop utilization) counts as a busy period. */
const BUSY_UTILIZATION = 0.1;
/** A reading below this counts as idle. */
const IDLE_UTILIZATION = 0.02;
/** How much V8's heap (committed) must have grown since the last release for another, MB. */
const RELEASE_GROWTH_MB = 16;

/**
 * releaseMemory at the end of each busy period, start-up counted as one: after IDLE_SAMPLES
 * readings in a row (5 s) under IDLE_UTILIZATION following start or a reading over
 * BUSY_UTILIZATION. The collection stops the event loop (0.3–1.6 s measured on a loaded two-core
 * machine), so it runs only when nothing is being asked: never right when the process has become
 * ready and clients start to call it, never under a steady load, and not when a load has just
 * begun: each reading covers one second, so a load of 20 ms or more in the last second defers it
 * (a 5 s window, as first written, let a load begin up to 100 ms before the collection and
 * stopped its first requests for a second). An idle stretch releases only when the heap has
 * grown by RELEASE_GROWTH_MB since the last release: a busy reading may be no load but V8's own
 * memory reducer (0.15–0.53 s of marking and pause in a second, some 8 s after each release),
 * and the collection's own time is left out of the next reading; counted, each made the next
 * busy period, and an idle `herald all` collected every ~6 s, 0.1–1.2 s each (BENCHMARKS.md,
 * 2026-11-28 15:02).
 * Returns the stop of the watch.
 */
export function releaseMemoryWhenIdle(): () => void {
  if (typeof globalThis.gc !== 'function') return () => {};
  let last = performance.eventLoopUtilization();
  let wasBusy = true;
  let idleSamples = 0;
  let heapAfterRelease = 0;
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const { utilization } = performance.eventLoopUtilization(now, last);
    last = now;
    idleSamples = utilization < IDLE_UTILIZATION ? idleSamples + 1 : 0;
    if (utilization >= BUSY_UTILIZATION) wasBusy = true;
    else if (wasBusy && idleSamples >= IDLE_SAMPLES) {
      wasBusy = false;
      if (process.memoryUsage().heapTotal - heapAfterRelease < RELEASE_GROWTH_MB * 2 ** 20) return;
      releaseMemory();
      heapAfterRelease = process.memoryUsage().heapTotal;
      last = performance.eventLoopUtilization();
    }
  }, SAMPLE_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * Starts `name` (api, worker, smtp, or all three on one ORM) in this process: `herald <name>`
 * runs it, and so does `herald dev` for `all` (one Node process for the whole dev stack). Each
 * part is imported when it runs: the api never loads the Temporal worker, the worker never Koa.
 * A cluster worker (API_PROCESSES > 1) hands its metrics to the cluster's primary.
 */
export async function startHerald(
  name: 'api' | 'worker' | 'smtp' | 'all',
  config: Config,
  logger: Logger,
  options: { clusterWorker?: boolean } = {},
): Promise<RunningHerald> {
  // The runtime an operator checks first when memory or latency looks off (src/cli/node-flags.mjs).
  logger.info('starting', { node: process.version, nodeFlags: process.execArgv });
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stops) await stop();
  };
  let done: Promise<void> | null = null;
  try {
    // `all` runs the three on one ORM (one pool of DATABASE_POOL_MAX connections).
    const shared =
      name === 'all'
        ? { orm: await (await import('../../db/orm.ts')).createOrm({ databaseUrl: config.database.url, poolMax: config.database.poolMax }) }
        : {};
    if (shared.orm) {
      const orm = shared.orm;
      stops.push(() => orm.close());
    }
    if (name === 'worker' || name === 'all') {
      const { installTemporalLogging, startWorker } = await import('../worker.ts');
      installTemporalLogging(logger);
      const worker = await startWorker(config, logger, shared);
      stops.unshift(() => worker.shutdown());
      done = worker.done;
    }
    if (name === 'api' || name === 'all') {
      const { startApi } = await import('../main-api.ts');
      const api = await startApi(config, logger, shared);
      stops.unshift(() => api.close());
    }
    if (name === 'smtp' || name === 'all') {
      const { startSmtp } = await import('../main-smtp.ts');
      const smtp = await startSmtp(config, logger, shared);
      stops.unshift(() => smtp.close());
    }
    if (options.clusterWorker) {
      (await import('../metrics/metrics.ts')).serveMetricsToClusterPrimary();
    } else if (config.metrics.port > 0) {
      const stop = await (await import('../metrics/metrics.ts')).serveMetricsOrWarn(config.metrics, logger);
      if (stop) stops.unshift(stop);
    }
  } catch (error) {
    // What did start is stopped, so a host that goes on living (the dev supervisor) holds nothing open.
    await stopAll().catch(() => {});
    throw error;
  }
  if (name === 'all') {
    const stopWatch = releaseMemoryWhenIdle();
    stops.push(() => Promise.resolve(stopWatch()));
  }
  return { stop: stopAll, done };
}
