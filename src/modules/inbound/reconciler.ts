import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import { startReconcileLoop, type ReconcileLoop } from '../../temporal/reconcile-loop.ts';
import { createInboundQueue } from './inbound-queue.repo.ts';
import { inboundIntakeActorContract } from '../../../workflows/inbound-intake.ts';
import { wakeActors } from '../../temporal/actor-wake.ts';

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

export type InboundReconciler = ReconcileLoop;

/**
 * The inbound reconciler (runs in every worker process). The smtp process wakes the inbound
 * actor after its 250 when the actor's drain is not running; if Temporal did not take that
 * wake-up (down, or the smtp process died in between) or the actor is gone (terminated, lost
 * with the Temporal server's state), raw messages stay `received` and due with no drain lease.
 * Every pass that finds such messages wakes the actor (signal-with-start: an actor that is
 * merely late costs one signal).
 */
export function startInboundReconciler(options: InboundReconcilerOptions): InboundReconciler {
  const { orm, temporal, config, logger } = options;
  const intervalMs = options.intervalMs ?? 10_000;
  const afterMs = options.afterMs ?? 5_000;
  const wakeDeadlineMs = options.wakeDeadlineMs ?? 10_000;
  const queue = createInboundQueue(orm);

  async function pass(): Promise<number> {
    if (!(await queue.isStranded(afterMs))) return 0;
    await wakeActors(temporal, config, inboundIntakeActorContract, [{}], { deadlineMs: wakeDeadlineMs });
    logger.info('inbound reconciler woke the inbound actor');
    return 1;
  }

  return startReconcileLoop({ name: 'inbound reconciler', intervalMs, logger, pass });
}
