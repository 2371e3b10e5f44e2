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
import { createCoalescedWake } from '../../queue/coalesced-wake.ts';
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
 * The API's wake-up of a domain's actor after a commit: coalesced per domain (queue/coalesced-wake.ts),
 * not awaited (the 202 does not wait for Temporal), and never failing the request: a lost
 * wake-up is the send reconciler's to repeat.
 */
export function createDomainWaker(deps: { temporal: Client; config: Pick<Config, 'temporal' | 'queues'>; logger: Logger }) {
  const wakes = createCoalescedWake({ drainLingerMs: deps.config.queues.drainLingerMs });
  return (target: SendDomainInput, emailId: string): void => {
    void wakes.fire(
      target.domainId,
      () => deps.temporal.withDeadline(Date.now() + WAKE_DEADLINE_MS, () => wakeDomainActors(deps.temporal, deps.config, [target])),
      (error) => deps.logger.warn('sending-domain actor not woken; the send reconciler will wake it', { emailId, domainId: target.domainId, error }),
    );
  };
}
