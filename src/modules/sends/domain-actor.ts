import type { Client } from '@temporalio/client';
import {
  SEND_DOMAIN_KIND,
  SEND_DOMAIN_WORKFLOW,
  sendDomainWorkflowId,
  wakeDomainSignal,
  type SendDomainInput,
  type sendDomainActor,
} from '../../../workflows/send-domain.ts';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import { workflowSearchAttributes } from '../../temporal/search-attributes.ts';

/**
 * Wakes the actors of some sending domains (`send-domain:<id>`), starting any that is not
 * running, with one signal-with-start each. Callers wake only domains whose drain is not
 * already running, after the emails they wrote are committed; a lost wake-up is caught by the
 * send reconciler.
 */
export async function wakeDomainActors(client: Client, config: Pick<Config, 'temporal'>, domains: readonly SendDomainInput[]): Promise<void> {
  await Promise.all(
    domains.map((target) =>
      client.workflow.signalWithStart<typeof sendDomainActor>(SEND_DOMAIN_WORKFLOW, {
        workflowId: sendDomainWorkflowId(target.domainId),
        taskQueue: config.temporal.taskQueue,
        args: [{ orgId: target.orgId, domainId: target.domainId }],
        signal: wakeDomainSignal,
        signalArgs: [],
        typedSearchAttributes: workflowSearchAttributes(target.orgId, SEND_DOMAIN_KIND),
      }),
    ),
  );
}

/** How long a wake-up may wait for Temporal before it is left to the send reconciler. */
const WAKE_DEADLINE_MS = 2_000;
/**
 * Wake-ups of one domain's actor from one process closer together than this are coalesced;
 * kept below the drain's linger, so a drain woken in the window is still running (its lease
 * visible to acceptance) when the window ends.
 */
const WAKE_COALESCE_MAX_MS = 1_000;
const MAX_REMEMBERED_DOMAINS = 10_000;

/**
 * The API's wake-up of a domain's actor after a commit: at most once per coalescing window per
 * domain from this process (a burst for a domain whose drain is not yet running would
 * otherwise signal Temporal per email), not awaited (the 202 does not wait for Temporal), and
 * never failing the request: a lost wake-up is the send reconciler's to repeat.
 */
export function createDomainWaker(deps: { temporal: Client; config: Pick<Config, 'temporal' | 'queues'>; logger: Logger }) {
  const lastWake = new Map<string, number>();
  const coalesceMs = Math.min(WAKE_COALESCE_MAX_MS, deps.config.queues.drainLingerMs / 2);
  return (target: SendDomainInput, emailId: string): void => {
    const nowMs = Date.now();
    if (nowMs - (lastWake.get(target.domainId) ?? 0) < coalesceMs) return;
    if (lastWake.size >= MAX_REMEMBERED_DOMAINS) lastWake.clear();
    lastWake.set(target.domainId, nowMs);
    deps.temporal
      .withDeadline(nowMs + WAKE_DEADLINE_MS, () => wakeDomainActors(deps.temporal, deps.config, [target]))
      .catch((error: unknown) => {
        lastWake.delete(target.domainId);
        deps.logger.warn('sending-domain actor not woken; the send reconciler will wake it', { emailId, domainId: target.domainId, error });
      });
  };
}
