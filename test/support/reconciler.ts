import type { Client } from '@temporalio/client';
import { createLogger } from '../../src/logger.ts';
import { startOutboxRelay, type OutboxRelay, type OutboxRelayOptions } from '../../src/modules/webhooks/outbox-relay.ts';
import type { TestStack } from './stack.ts';

type ReconcileTuning = Pick<OutboxRelayOptions, 'reconcileAfterMs' | 'reconcileBatchSize'>;

/**
 * Runs `body` with an outbox relay of the test's own whose periodic reconcile is parked (one
 * pass an hour), so the test calls `relay.reconcile()` when it wants a pass; stopped after.
 */
export async function withManualReconciler<T>(
  stack: TestStack,
  temporal: Client,
  tuning: ReconcileTuning,
  body: (relay: OutboxRelay) => Promise<T>,
): Promise<T> {
  const relay = startOutboxRelay({
    orm: stack.orm,
    databaseUrl: stack.databaseUrl,
    temporal,
    config: stack.config,
    logger: createLogger('warn'),
    reconcileIntervalMs: 3_600_000,
    ...tuning,
  });
  try {
    return await body(relay);
  } finally {
    await relay.stop();
  }
}
