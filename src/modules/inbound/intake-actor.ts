import type { Client } from '@temporalio/client';
import {
  INBOUND_INTAKE_KIND,
  INBOUND_INTAKE_WORKFLOW,
  inboundIntakeWorkflowId,
  wakeInboundIntakeSignal,
  type inboundIntakeActor,
} from '../../../workflows/inbound-intake.ts';
import type { Config } from '../../config.ts';
import { PLATFORM_ORG_ID, workflowSearchAttributes } from '../../temporal/search-attributes.ts';

/**
 * Wakes the inbound actor (`inbound-intake:<prefix>`), starting it when it is not running, with one
 * signal-with-start. Callers wake it only while its drain is not running, after the raw
 * messages they recorded are committed; a lost wake-up is caught by the inbound reconciler.
 * It serves every workspace, so it is filed under the platform id.
 */
export async function wakeInboundIntake(client: Client, config: Pick<Config, 'temporal'>): Promise<void> {
  await client.workflow.signalWithStart<typeof inboundIntakeActor>(INBOUND_INTAKE_WORKFLOW, {
    workflowId: inboundIntakeWorkflowId(config.temporal.schedulePrefix),
    taskQueue: config.temporal.taskQueue,
    args: [{}],
    signal: wakeInboundIntakeSignal,
    signalArgs: [],
    typedSearchAttributes: workflowSearchAttributes(PLATFORM_ORG_ID, INBOUND_INTAKE_KIND),
  });
}
