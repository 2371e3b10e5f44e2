import { WithStartWorkflowOperation, WorkflowIdConflictPolicy, WorkflowUpdateStage, type Client } from '@temporalio/client';
import type { sendEmail } from '../../../workflows/index.ts';
import type { Config } from '../../config.ts';
import { HeraldDeliveryStatus, HeraldRecipientDomain, workflowSearchAttributes } from '../../temporal/search-attributes.ts';
import { HANDOFF_UPDATE, SEND_EMAIL_WORKFLOW, sendWorkflowId, type HandoffResult, type SendEmailWorkflowInput } from './send-workflow.ts';

export interface StartSendInput {
  orgId: string;
  emailId: string;
  scheduledAt: Date | null;
  /** The first recipient's domain, for operators filtering in the Temporal UI. */
  recipientDomain: string;
}

function workflowOptions(config: Pick<Config, 'temporal' | 'sends'>, input: StartSendInput) {
  const args: [SendEmailWorkflowInput] = [
    {
      orgId: input.orgId,
      emailId: input.emailId,
      scheduledAt: input.scheduledAt?.toISOString() ?? null,
      retryScheduleMs: config.sends.retryScheduleMs,
      retryWindowMs: config.sends.retryWindowMs,
    },
  ];
  return {
    workflowId: sendWorkflowId(input.emailId),
    taskQueue: config.temporal.taskQueues.email,
    args,
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    typedSearchAttributes: [
      ...workflowSearchAttributes(input.orgId, 'email'),
      { key: HeraldRecipientDomain, value: input.recipientDomain },
      { key: HeraldDeliveryStatus, value: input.scheduledAt ? 'scheduled' : 'queued' },
    ],
  };
}

/**
 * Starts the `email:<id>` workflow (or joins the running one). For an immediate send, it also
 * asks for the hand-off in the same request (update-with-start) and waits up to `waitMs` for
 * it: the answer, or null when the hand-off takes longer (the email is still on its way).
 * Call only after the email row is committed.
 */
export async function startSendWorkflow(
  client: Client,
  config: Pick<Config, 'temporal' | 'sends'>,
  input: StartSendInput,
  waitMs: number,
): Promise<HandoffResult | null> {
  const options = workflowOptions(config, input);
  if (input.scheduledAt !== null || waitMs <= 0) {
    await client.workflow.start<typeof sendEmail>(SEND_EMAIL_WORKFLOW, options);
    return null;
  }
  const handle = await client.workflow.startUpdateWithStart<typeof sendEmail, HandoffResult, []>(HANDOFF_UPDATE, {
    waitForStage: WorkflowUpdateStage.ACCEPTED,
    startWorkflowOperation: new WithStartWorkflowOperation<typeof sendEmail>(SEND_EMAIL_WORKFLOW, options),
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), waitMs);
  });
  try {
    return await Promise.race([handle.result(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Tells a waiting `email:<id>` workflow that its email was cancelled (best effort: the row is the truth). */
export async function signalSendCancelled(client: Client, emailId: string): Promise<void> {
  await client.workflow.getHandle(sendWorkflowId(emailId)).signal('cancel');
}
