import cluster, { type Worker } from 'node:cluster';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { onShutdown, SHUTDOWN_MESSAGE } from '../shutdown.ts';

/** How long a worker may take to stop gracefully before it is killed. */
const STOP_TIMEOUT_MS = 30_000;
/** A worker that dies sooner than this after its start counts as crash-looping: restarts back off. */
const HEALTHY_AFTER_MS = 10_000;
const MAX_RESTART_DELAY_MS = 30_000;

/**
 * `herald api` with API_PROCESSES > 1: this process (the primary) runs no application code; it
 * forks that many api processes, which share the listening port (node:cluster hands each new
 * connection to one of them), restarts one that dies (backing off while they keep dying at
 * start), serves the workers' Prometheus metrics summed at METRICS_PORT, and on SIGTERM/SIGINT
 * asks each to stop gracefully (in-flight requests finish) before it exits. The api is
 * stateless, so requests need no affinity to a process.
 */
export async function runApiCluster(config: Config, logger: Logger): Promise<void> {
  const count = config.http.processes;
  let stopping = false;
  let restartDelay = 0;
  const started = new Map<number, number>();

  const fork = (): Worker => {
    const worker = cluster.fork();
    started.set(worker.id, Date.now());
    return worker;
  };

  cluster.on('exit', (worker, code, signal) => {
    const lived = Date.now() - (started.get(worker.id) ?? 0);
    started.delete(worker.id);
    if (stopping) return;
    restartDelay = lived >= HEALTHY_AFTER_MS ? 0 : Math.min(MAX_RESTART_DELAY_MS, Math.max(500, restartDelay * 2));
    logger.error('api process exited; starting another', { pid: worker.process.pid, code, signal, restartInMs: restartDelay });
    setTimeout(() => {
      if (!stopping) fork();
    }, restartDelay);
  });

  for (let index = 0; index < count; index += 1) fork();
  logger.info('api cluster started', { processes: count });

  const stops: (() => Promise<void>)[] = [];
  if (config.metrics.port > 0) {
    const { serveMetricsOrWarn, clusterMetricsSource } = await import('../metrics/metrics.ts');
    const stop = await serveMetricsOrWarn(config.metrics, logger, clusterMetricsSource(), { of: `${count} api processes` });
    if (stop) stops.push(stop);
  }

  onShutdown(logger, async () => {
    stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined);
    await Promise.all(workers.map((worker) => stopWorker(worker)));
    for (const stop of stops) await stop();
  });
}

/** Asks one worker to stop gracefully; kills it if it has not exited within STOP_TIMEOUT_MS. */
function stopWorker(worker: Worker): Promise<void> {
  if (worker.isDead()) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => worker.process.kill('SIGKILL'), STOP_TIMEOUT_MS);
    worker.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    if (worker.isConnected()) worker.send(SHUTDOWN_MESSAGE);
    else worker.process.kill('SIGTERM');
  });
}
