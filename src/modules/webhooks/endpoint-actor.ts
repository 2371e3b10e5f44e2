import type { Client } from '@temporalio/client';
import {
  WEBHOOK_ENDPOINT_KIND,
  WEBHOOK_ENDPOINT_WORKFLOW,
  wakeEndpointSignal,
  webhookEndpointWorkflowId,
  type WebhookEndpointInput,
  type webhookEndpointActor,
} from '../../../workflows/webhook-endpoint.ts';
import type { Config } from '../../config.ts';
import { workflowSearchAttributes } from '../../temporal/search-attributes.ts';

/** Signals sent at once by one wake-up call. */
const WAKE_CONCURRENCY = 16;

/**
 * Wakes the actors of some endpoints (`webhook-endpoint:<id>`), starting any that is not
 * running, with one signal-with-start each. Callers wake only endpoints whose drain is not
 * already running (see EndpointQueue.leaseEndpoint), after the rows they wrote are committed;
 * a lost wake-up is caught by the webhook reconciler. Rejects with the first failure.
 */
export async function wakeEndpointActors(
  client: Client,
  config: Pick<Config, 'temporal'>,
  endpoints: readonly WebhookEndpointInput[],
): Promise<void> {
  let next = 0;
  let failure: unknown;
  const lane = async () => {
    while (next < endpoints.length && failure === undefined) {
      const target = endpoints[next]!;
      next += 1;
      try {
        await client.workflow.signalWithStart<typeof webhookEndpointActor>(WEBHOOK_ENDPOINT_WORKFLOW, {
          workflowId: webhookEndpointWorkflowId(target.endpointId),
          taskQueue: config.temporal.taskQueue,
          args: [{ orgId: target.orgId, endpointId: target.endpointId }],
          signal: wakeEndpointSignal,
          signalArgs: [],
          typedSearchAttributes: workflowSearchAttributes(target.orgId, WEBHOOK_ENDPOINT_KIND),
        });
      } catch (error) {
        failure ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(WAKE_CONCURRENCY, endpoints.length) }, lane));
  if (failure !== undefined) throw failure instanceof Error ? failure : new Error('wake-up failed', { cause: failure });
}

/**
 * `wakeEndpointActors` for endpoints as the outbox queries return them, giving up on an
 * unresponsive Temporal after `deadlineMs`.
 */
export function wakeEndpointsWithin(
  client: Client,
  config: Pick<Config, 'temporal'>,
  endpoints: readonly { id: string; org_id: string }[],
  deadlineMs: number,
): Promise<void> {
  return client.connection.withDeadline(Date.now() + deadlineMs, () =>
    wakeEndpointActors(client, config, endpoints.map((e) => ({ orgId: e.org_id, endpointId: e.id }))),
  );
}
