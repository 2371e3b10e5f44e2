import { drainContext } from './drain-context.ts';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { DrainSummary, WebhookEndpointInput } from '../workflows/webhook-endpoint.ts';
import type { Config } from '../src/config.ts';
import { createEndpointDrainer } from '../src/modules/webhooks/endpoint-drain.ts';
import type { QueueWakes } from '../src/queue/wakes.ts';

export interface WebhookActivityDeps {
  orm: MikroORM;
  config: Pick<Config, 'webhooks' | 'queues' | 'encryptionKeys'>;
  /** In-process wake-ups of running queue drains (one LISTEN per worker process). */
  queueWakes: QueueWakes;
}

/**
 * Webhook delivery activities. drainWebhookEndpoint is the endpoint actor's one activity: it
 * claims, sends and records the endpoint's due deliveries in batches and heartbeats while it
 * works (src/modules/webhooks/endpoint-drain.ts); a cancelled drain stops claiming and finishes
 * what is in flight.
 */
export function createWebhookActivities(deps: WebhookActivityDeps) {
  const drainer = createEndpointDrainer({ orm: deps.orm, config: deps.config, wakes: deps.queueWakes });
  return {
    async drainWebhookEndpoint(input: WebhookEndpointInput): Promise<DrainSummary> {
      return drainer.drain(input, drainContext());
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
