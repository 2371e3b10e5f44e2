import type { Logger } from '../logger.ts';
import { isDatabaseUnavailable } from './unavailable.ts';

/** Asks PostgreSQL whether it serves again (MikroORM's `orm.checkConnection()`). */
export type DatabaseProbe = () => Promise<{ ok: boolean }>;

export interface DatabaseOutage {
  /**
   * Takes a failure: when it means PostgreSQL is unavailable (src/db/unavailable.ts) it joins the
   * current outage (opening one, logged once, if none is open) and returns true, so the caller
   * answers it as temporary and logs nothing itself; any other error returns false.
   */
  report(error: unknown): boolean;
  /** Whether an outage is open (no successful probe since the first failure). */
  isDown(): boolean;
  /** Runs `task` once PostgreSQL is back (at once when no outage is open); its failure is logged. */
  whenBack(task: () => Promise<unknown>): void;
  /** Stops probing. */
  close(): void;
}

export interface DatabaseOutageOptions {
  logger: Logger;
  probe: DatabaseProbe;
  /** How often an open outage probes PostgreSQL (default 1 s). */
  probeIntervalMs?: number;
  now?: () => number;
}

/**
 * A process's view of PostgreSQL outages. The first failure that means "unavailable" logs one
 * warning, "PostgreSQL unavailable since <time>", and starts a probe every second; the first
 * probe that succeeds logs "PostgreSQL back after N s" and runs the tasks left for that moment.
 * In between, every request that fails for the same reason is one count in the outage, not a
 * log line with a stack. Nothing here refuses requests: each still tries its statement, so the
 * pool reconnects as soon as the server accepts connections again.
 */
export function createDatabaseOutage(options: DatabaseOutageOptions): DatabaseOutage {
  const { logger, probe } = options;
  const interval = options.probeIntervalMs ?? 1_000;
  const now = options.now ?? Date.now;
  let since: number | null = null;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const pending: (() => Promise<unknown>)[] = [];

  function run(task: () => Promise<unknown>) {
    task().catch((error: unknown) => {
      if (!report(error)) logger.error('a task deferred until PostgreSQL was back failed', { error });
      else pending.push(task);
    });
  }

  function recovered() {
    const downMs = now() - (since ?? now());
    logger.info(`PostgreSQL back after ${(downMs / 1000).toFixed(1)} s`, { downMs, failures });
    since = null;
    failures = 0;
    for (const task of pending.splice(0)) run(task);
  }

  function scheduleProbe() {
    if (closed) return;
    timer = setTimeout(() => {
      probe().then(
        (result) => (result.ok ? recovered() : scheduleProbe()),
        () => scheduleProbe(),
      );
    }, interval);
    timer.unref();
  }

  function report(error: unknown): boolean {
    if (!isDatabaseUnavailable(error)) return false;
    failures += 1;
    if (since !== null) return true;
    since = now();
    const cause = error instanceof Error ? error.message : String(error);
    logger.warn(`PostgreSQL unavailable since ${new Date(since).toISOString()}`, {
      cause: cause.split('\n')[0],
      code: (error as { code?: unknown }).code,
    });
    scheduleProbe();
    return true;
  }

  return {
    report,
    isDown: () => since !== null,
    whenBack(task) {
      if (since === null) run(task);
      else pending.push(task);
    },
    close() {
      closed = true;
      clearTimeout(timer);
    },
  };
}
