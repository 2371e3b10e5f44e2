import { WorkflowIdConflictPolicy, type Client } from '@temporalio/client';
import type { ingestInbound } from '../../../workflows/index.ts';
import type { Config } from '../../config.ts';
import { PLATFORM_ORG_ID, workflowSearchAttributes } from '../../temporal/search-attributes.ts';

export const INGEST_INBOUND_WORKFLOW = 'ingestInbound';

/** Business id of a raw message's ingestion: one run per InboundMessage. */
export function inboundWorkflowId(inboundId: string): string {
  return `inbound:${inboundId}`;
}

/**
 * Starts ingestInbound for a recorded raw message, or joins the run already under its id
 * (USE_EXISTING), so the smtp process and the reconciler may both start it. Call it only after
 * the InboundMessage row is committed. HeraldOrgId is `platform` until routing knows better
 * (the workflow may reach several workspaces).
 */
export async function startInboundWorkflow(
  client: Client,
  config: Pick<Config, 'temporal'>,
  input: { inboundId: string; orgId?: string },
  options: { eager?: boolean } = {},
): Promise<void> {
  await client.workflow.start<typeof ingestInbound>(INGEST_INBOUND_WORKFLOW, {
    workflowId: inboundWorkflowId(input.inboundId),
    taskQueue: config.temporal.taskQueue,
    args: [{ inboundId: input.inboundId }],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    ...(options.eager ? { requestEagerStart: true } : {}),
    typedSearchAttributes: workflowSearchAttributes(input.orgId ?? PLATFORM_ORG_ID, 'inbound'),
  });
}
