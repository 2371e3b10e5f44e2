import type { Client } from '@temporalio/client';
import { createLogger } from '../../src/logger.ts';
import { startLoop, type BackgroundLoop } from '../../src/queue/background-loop.ts';
import { createWebhookReconciler, type WebhookReconcilerOptions } from '../../src/modules/webhooks/webhook-reconciler.ts';
import type { TestStack } from './stack.ts';

type ReconcileTuning = Pick<WebhookReconcilerOptions, 'afterMs' | 'batchSize'>;

/**
 * Runs `body` with a webhook reconciler of the test's own whose periodic pass is parked (one
 * pass an hour after the one at start), so the test calls `reconciler.poke()` when it wants a
 * pass; stopped after.
 */
export async function withManualReconciler<T>(
  stack: TestStack,
  temporal: Client,
  tuning: ReconcileTuning,
  body: (reconciler: BackgroundLoop) => Promise<T>,
): Promise<T> {
  const logger = createLogger('warn');
  const reconciler = startLoop(
    createWebhookReconciler({ orm: stack.orm, temporal, config: stack.config, logger, intervalMs: 3_600_000, ...tuning }),
    { logger },
  );
  try {
    return await body(reconciler);
  } finally {
    await reconciler.stop();
  }
}
