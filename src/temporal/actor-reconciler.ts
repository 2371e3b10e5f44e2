import type { Client } from '@temporalio/client';
import type { ActorContract } from '../../workflows/actor-contract.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { LoopSpec } from '../queue/background-loop.ts';
import { wakeActors } from './actor-wake.ts';

/** A wake-up gives up on an unresponsive Temporal after this long unless said otherwise. */
const WAKE_DEADLINE_MS = 10_000;

/**
 * The shape every actor's reconciler shares (a background loop in every worker process): each
 * pass asks `findStranded` for owners with rows due and no drain lease held (an actor
 * terminated, lost with the Temporal server's state, or a wake-up that never reached Temporal)
 * and wakes their actors by signal-with-start (an actor merely late costs one signal). A lost
 * wake-up thereby costs latency, never a row. A pass resolves with the actors woken.
 */
export function createActorReconciler<Input>(spec: {
  name: string;
  actor: ActorContract<Input>;
  temporal: Client;
  config: Pick<Config, 'temporal'>;
  logger: Logger;
  intervalMs: number;
  findStranded: () => Promise<Input[]>;
  wakeDeadlineMs?: number;
}): LoopSpec {
  return {
    name: spec.name,
    intervalMs: spec.intervalMs,
    async pass() {
      const stranded = await spec.findStranded();
      if (stranded.length === 0) return 0;
      await wakeActors(spec.temporal, spec.config, spec.actor, stranded, { deadlineMs: spec.wakeDeadlineMs ?? WAKE_DEADLINE_MS });
      spec.logger.info(`${spec.name} woke ${spec.actor.kind} actors`, { count: stranded.length });
      return stranded.length;
    },
  };
}
