import { WorkflowIdConflictPolicy, type Client } from '@temporalio/client';
import type { deliverWebhook } from '../../../workflows/index.ts';
import type { Config } from '../../config.ts';
import { HeraldDeliveryStatus, workflowSearchAttributes } from '../../temporal/search-attributes.ts';
import { DELIVER_WEBHOOK_WORKFLOW, deliveryWorkflowId, type DeliverWebhookInput } from './delivery-workflow.ts';

/**
 * Starts the deliverWebhook run of one attempt series, or joins the one already running under
 * its id (USE_EXISTING), so starting twice (relay retry, reconciler, replay) never runs two.
 * A start for an id whose run already closed begins a new run, which stops at once when the
 * delivery is final (see delivery-engine.ts). Call it only after the delivery row is committed.
 */
export async function startDeliveryWorkflow(
  client: Client,
  config: Pick<Config, 'temporal'>,
  input: DeliverWebhookInput,
  options: { eager?: boolean } = {},
): Promise<void> {
  await client.workflow.start<typeof deliverWebhook>(DELIVER_WEBHOOK_WORKFLOW, {
    workflowId: deliveryWorkflowId(input.deliveryId, input.series),
    taskQueue: config.temporal.taskQueues.webhooks,
    args: [{ orgId: input.orgId, deliveryId: input.deliveryId, series: input.series }],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    ...(options.eager ? { requestEagerStart: true } : {}),
    typedSearchAttributes: [
      ...workflowSearchAttributes(input.orgId, 'webhook-delivery'),
      { key: HeraldDeliveryStatus, value: 'queued' },
    ],
  });
}
