import { Context } from '@temporalio/activity';

/**
 * The running activity's heartbeat and cancellation, as a queue drain takes them: a drain
 * heartbeats while it works and stops claiming once its activity is cancelled.
 */
export function drainContext(): { heartbeat(): void; signal: AbortSignal } {
  const context = Context.current();
  return { heartbeat: () => context.heartbeat(), signal: context.cancellationSignal };
}
