import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import type { LoopSpec } from '../../queue/background-loop.ts';
import { createInboundQueue } from './inbound-queue.repo.ts';
import { inboundIntakeActorContract } from '../../../workflows/inbound-intake.ts';
import { createActorReconciler } from '../../temporal/actor-reconciler.ts';

export interface InboundReconcilerOptions {
  orm: MikroORM;
  temporal: Client;
  config: Pick<Config, 'temporal'>;
  logger: Logger;
  /** Between passes (default 10 s). */
  intervalMs?: number;
  /** A raw message due this long with no drain running gets the inbound actor woken (default 5 s). */
  afterMs?: number;
  /** A wake-up gives up on an unresponsive Temporal after this long (default 10 s). */
  wakeDeadlineMs?: number;
}

/**
 * The inbound reconciler (a background loop in every worker process). The smtp process wakes
 * the inbound actor after its 250 when the actor's drain is not running; if Temporal did not
 * take that wake-up (down, or the smtp process died in between) or the actor is gone
 * (terminated, lost with the Temporal server's state), raw messages stay `received` and due with
 * no drain lease. Every pass that finds such messages wakes the actor (signal-with-start: an
 * actor that is merely late costs one signal); it resolves with 1 when it did, else 0.
 */
export function createInboundReconciler(options: InboundReconcilerOptions): LoopSpec {
  const afterMs = options.afterMs ?? 5_000;
  const queue = createInboundQueue(options.orm);
  return createActorReconciler({
    ...options,
    name: 'inbound reconciler',
    actor: inboundIntakeActorContract,
    intervalMs: options.intervalMs ?? 10_000,
    // One actor owns the whole inbound queue.
    findStranded: async () => ((await queue.isStranded(afterMs)) ? [{}] : []),
  });
}
