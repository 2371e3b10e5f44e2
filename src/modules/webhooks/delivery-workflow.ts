/**
 * The contract between the webhooks API and the delivery engine: workflow names and ids.
 * `deliverWebhook` (workflows/webhooks.ts) delivers one WebhookDelivery row; a replay starts a
 * new run under `webhook-delivery:<deliveryId>:replay-<n>` so every series has its own history.
 */
export const DELIVER_WEBHOOK_WORKFLOW = 'deliverWebhook';

export interface DeliverWebhookInput {
  orgId: string;
  deliveryId: string;
  /** Attempt series: 0 for the original delivery, n for the n-th replay. */
  series: number;
}

export function deliveryWorkflowId(deliveryId: string, series: number): string {
  return series === 0 ? `webhook-delivery:${deliveryId}` : `webhook-delivery:${deliveryId}:replay-${series}`;
}
