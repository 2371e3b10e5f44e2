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
