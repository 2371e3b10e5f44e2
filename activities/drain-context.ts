import { Context } from '@temporalio/activity';
import type { DrainContext } from '../src/queue/drainer.ts';

/**
 * The running activity's heartbeat and cancellation, as a queue drain takes them
 * (src/queue/drainer.ts): a drain heartbeats while it works and stops claiming once its
 * activity is cancelled.
 */
export function drainContext(): DrainContext {
  const context = Context.current();
  return { heartbeat: () => context.heartbeat(), signal: context.cancellationSignal };
}
