import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { Config } from '../config.ts';
import type * as workflows from '../../workflows/index.ts';
import { PLATFORM_ORG_ID, workflowSearchAttributes } from './search-attributes.ts';

export function cleanupScheduleId(config: Pick<Config, 'temporal'>): string {
  return `${config.temporal.schedulePrefix}-cleanup-idempotency`;
}

/**
 * Creates Herald's Temporal Schedules when missing. Runs at every worker start, so a new
 * deployment (or a wiped dev server) gets them without an operator step. The cleanup runs
 * hourly and once at creation; overlapping runs are skipped.
 */
export async function ensureSchedules(
  client: Client,
  config: Pick<Config, 'temporal'>,
): Promise<{ created: string[] }> {
  const scheduleId = cleanupScheduleId(config);
  try {
    await client.schedule.create({
      scheduleId,
      spec: { intervals: [{ every: '1h' }] },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1h' },
      state: { triggerImmediately: true },
      action: {
        type: 'startWorkflow',
        workflowType: 'cleanupIdempotencyRecords' satisfies keyof typeof workflows,
        taskQueue: config.temporal.taskQueues.email,
        workflowExecutionTimeout: '30 minutes',
        typedSearchAttributes: workflowSearchAttributes(PLATFORM_ORG_ID, 'maintenance'),
      },
      typedSearchAttributes: workflowSearchAttributes(PLATFORM_ORG_ID, 'maintenance'),
    });
    return { created: [scheduleId] };
  } catch (error) {
    if (error instanceof ScheduleAlreadyRunning) return { created: [] };
    throw error;
  }
}
