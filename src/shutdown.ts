import type { Logger } from './logger.ts';

/** The IPC message a supervising process (the api cluster's primary) sends to ask for a graceful stop. */
export const SHUTDOWN_MESSAGE = 'herald:shutdown';

/**
 * Runs `stop` once on SIGINT/SIGTERM (or SHUTDOWN_MESSAGE from a supervising parent), then
 * exits. A second signal exits at once, so an operator is never stuck behind a hung shutdown;
 * a message while stopping is ignored (Ctrl-C reaches a cluster's workers and its primary).
 */
export function onShutdown(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals | 'message') => {
    if (stopping) {
      if (signal === 'message') return;
      process.exit(130);
    }
    stopping = true;
    logger.info('shutting down', { signal });
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error('shutdown failed', { error });
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  if (process.send) {
    process.on('message', (message) => {
      if (message === SHUTDOWN_MESSAGE) handler('message');
    });
  }
}
