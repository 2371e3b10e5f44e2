import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import type { LoopSpec } from '../../queue/background-loop.ts';
import { sendDomainActorContract } from '../../../workflows/send-domain.ts';
import { createActorReconciler } from '../../temporal/actor-reconciler.ts';
import { createDomainQueue } from './domain-queue.repo.ts';

export interface SendReconcilerOptions {
  orm: MikroORM;
  temporal: Client;
  config: Pick<Config, 'temporal'>;
  logger: Logger;
  /** Between passes (default 10 s). */
  intervalMs?: number;
  /** An email due this long with no drain of its domain running gets the domain's actor woken (default 5 s). */
  afterMs?: number;
  /** Domains woken per pass at most (default 200). */
  batchSize?: number;
}

/**
 * The send reconciler (a background loop in every worker process). The API wakes a sending domain's actor
 * right after the acceptance commit; if Temporal did not take that wake-up (down, the api died
 * in between) or the actor is gone (terminated, lost with the Temporal server's state), the
 * domain's emails stay due with no drain lease. Every pass wakes the actor of each such domain
 * (signal-with-start: an actor that is merely late costs one signal). A pass resolves with the
 * actors woken.
 */
export function createSendReconciler(options: SendReconcilerOptions): LoopSpec {
  const afterMs = options.afterMs ?? 5_000;
  const batchSize = options.batchSize ?? 200;
  const queue = createDomainQueue(options.orm);
  return createActorReconciler({
    ...options,
    name: 'send reconciler',
    actor: sendDomainActorContract,
    intervalMs: options.intervalMs ?? 10_000,
    findStranded: async () => (await queue.findStranded(afterMs, batchSize)).map((d) => ({ orgId: d.org_id, domainId: d.id })),
  });
}
