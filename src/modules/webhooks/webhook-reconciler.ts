import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import type { LoopSpec } from '../../queue/background-loop.ts';
import { createActorReconciler } from '../../temporal/actor-reconciler.ts';
import { webhookEndpointActorContract } from '../../../workflows/webhook-endpoint.ts';
import { findStrandedEndpoints } from './outbox.repo.ts';

export interface WebhookReconcilerOptions {
  orm: MikroORM;
  temporal: Client;
  config: Pick<Config, 'temporal'>;
  logger: Logger;
  /** Between passes (default 30 s). */
  intervalMs?: number;
  /** How long a row may be due with no drain running before its actor is woken (default 10 s). */
  afterMs?: number;
  /** Endpoints woken per pass at most (default 500). */
  batchSize?: number;
  /** A wake-up gives up on an unresponsive Temporal after this long (default 10 s). */
  wakeDeadlineMs?: number;
}

/**
 * The webhook reconciler (a background loop in every worker process), the other half of the
 * webhook fan-out (`webhook-fan-out.ts`). Each pass wakes the actor of every endpoint
 * that has rows due for longer than `afterMs` (or attempts whose lease lapsed) and no drain
 * lease: an actor that was terminated, lost with the Temporal server's state, or never started
 * because Temporal was down when the fan-out or a replay tried. A wake of an actor that is
 * merely slow is harmless (one signal). The first pass, at start, uses no margin: a due row
 * whose endpoint holds no drain lease has nobody on it (a worker coming back after an outage).
 * A pass resolves with the endpoint actors woken.
 */
export function createWebhookReconciler(options: WebhookReconcilerOptions): LoopSpec {
  const afterMs = options.afterMs ?? 10_000;
  const batchSize = options.batchSize ?? 500;
  let marginMs = 0;
  return createActorReconciler({
    ...options,
    name: 'webhook reconciler',
    actor: webhookEndpointActorContract,
    intervalMs: options.intervalMs ?? 30_000,
    async findStranded() {
      const margin = marginMs;
      marginMs = afterMs;
      const stranded = await findStrandedEndpoints(options.orm.em.fork(), margin, batchSize);
      return stranded.map((e) => ({ orgId: e.org_id, endpointId: e.id }));
    },
  });
}
