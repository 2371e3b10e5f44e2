import type { Client } from '@temporalio/client';
import pLimit from 'p-limit';
import type { ActorContract } from '../../workflows/actor-contract.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { createCoalescedWake } from '../queue/coalesced-wake.ts';
import { workflowSearchAttributes } from './search-attributes.ts';

/** Signals sent at once by one wake-up call. */
const WAKE_CONCURRENCY = 16;

/**
 * Wakes queue actors (workflows/actor-contract.ts), starting any that is not running: one
 * signal-with-start each, WAKE_CONCURRENCY at a time, all within `deadlineMs` when given. Every
 * actor is tried; rejects with the first failure after that. Callers wake only after the rows
 * they wrote are committed, and only actors whose drain is not already running; a lost wake-up
 * is the actor's reconciler's to repeat.
 */
export async function wakeActors<Input>(
  client: Client,
  config: Pick<Config, 'temporal'>,
  actor: ActorContract<Input>,
  inputs: readonly Input[],
  options: { deadlineMs?: number } = {},
): Promise<void> {
  if (inputs.length === 0) return;
  const limit = pLimit(WAKE_CONCURRENCY);
  const signal = (input: Input) =>
    client.workflow.signalWithStart(actor.workflowType, {
      workflowId: actor.workflowId(input, config.temporal.schedulePrefix),
      taskQueue: config.temporal.taskQueue,
      args: [input],
      signal: actor.wake,
      signalArgs: [],
      typedSearchAttributes: workflowSearchAttributes(actor.orgIdOf(input), actor.kind),
    });
  const all = () => Promise.allSettled(inputs.map((input) => limit(() => signal(input))));
  const results = options.deadlineMs === undefined ? await all() : await client.withDeadline(Date.now() + options.deadlineMs, all);
  const failed = results.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason instanceof Error ? failed.reason : new Error('wake-up failed', { cause: failed.reason });
}

/**
 * The wake-up a writer sends after its commit (the API, the inbound SMTP server): coalesced per
 * actor (queue/coalesced-wake.ts), bounded by `deadlineMs`, not awaited by the request, and never
 * failing it: a wake-up that fails is logged and left to the actor's reconciler. Returns the
 * wake-up's promise (settles, never rejects), or null when one went out within the window.
 */
export function createActorWaker<Input>(deps: {
  client: Client;
  config: Pick<Config, 'temporal' | 'queues'>;
  logger: Logger;
  actor: ActorContract<Input>;
  deadlineMs: number;
}) {
  const coalesced = createCoalescedWake({ drainLingerMs: deps.config.queues.drainLingerMs });
  return (input: Input, context: Record<string, unknown> = {}): Promise<void> | null =>
    coalesced.fire(
      deps.actor.workflowId(input, deps.config.temporal.schedulePrefix),
      () => wakeActors(deps.client, deps.config, deps.actor, [input], { deadlineMs: deps.deadlineMs }),
      (error) =>
        deps.logger.warn(`${deps.actor.kind} actor not woken; its reconciler will wake it`, {
          ...context,
          error: error instanceof Error ? error.message : String(error),
        }),
    );
}
