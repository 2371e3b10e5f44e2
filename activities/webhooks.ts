import { Context } from '@temporalio/activity';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../src/config.ts';
import {
  createDeliveryEngine,
  type AttemptInput,
  type AttemptResult,
} from '../src/modules/webhooks/delivery-engine.ts';

export interface WebhookActivityDeps {
  orm: MikroORM;
  config: Pick<Config, 'webhooks' | 'encryptionKey'>;
}

const HEARTBEAT_EVERY_MS = 2_000;

/**
 * Webhook delivery activities. attemptWebhookDelivery makes one HTTP attempt and records it
 * (src/modules/webhooks/delivery-engine.ts); the receiver's answer, whatever it is, is its
 * result, so Temporal retries it only for infrastructure failures (database down, worker lost).
 * A retry of an attempt that was already recorded returns the record instead of sending again.
 * The engine (and its per-endpoint concurrency limit) is one per worker process.
 */
export function createWebhookActivities(deps: WebhookActivityDeps) {
  const engine = createDeliveryEngine(deps);
  return {
    async attemptWebhookDelivery(input: AttemptInput): Promise<AttemptResult> {
      const context = Context.current();
      // Scheduled as a local activity by deliverWebhook (no heartbeats); as a regular one, it beats.
      if (context.info.isLocal) return engine.attempt(input);
      const heartbeat = setInterval(() => context.heartbeat(), HEARTBEAT_EVERY_MS);
      try {
        return await engine.attempt(input);
      } finally {
        clearInterval(heartbeat);
      }
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
