import type { Logger } from '../logger.ts';

export interface ReconcileLoop {
  /** One pass now (joins a pass already running); resolves with the workflows started. */
  reconcile(): Promise<number>;
  /** Stops the timer and waits for a pass in progress. */
  stop(): Promise<void>;
}

/**
 * Runs `pass` every `intervalMs` (and once at once), one pass at a time. A failing pass (the
 * database or Temporal away) is logged once until a pass succeeds again, and counts as 0.
 * The reconcilers of the send and inbound pipelines share it: each pass starts the workflows
 * of committed rows whose start did not reach Temporal.
 */
export function startReconcileLoop(options: { name: string; intervalMs: number; logger: Logger; pass(): Promise<number> }): ReconcileLoop {
  const { name, logger } = options;
  let running: Promise<number> | null = null;
  let failing = false;

  function reconcile(): Promise<number> {
    running ??= options
      .pass()
      .then((count) => {
        if (failing) logger.info(`${name} recovered`);
        failing = false;
        return count;
      })
      .catch((error: unknown) => {
        if (!failing) logger.warn(`${name}: pass failed; retrying`, { error: error instanceof Error ? error.message : String(error) });
        failing = true;
        return 0;
      })
      .finally(() => {
        running = null;
      });
    return running;
  }

  const timer = setInterval(() => void reconcile(), options.intervalMs);
  void reconcile();
  return {
    reconcile,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
