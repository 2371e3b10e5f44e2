import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';
import type { Config } from '../config.ts';
import type * as workflows from '../../workflows/index.ts';
import { PLATFORM_ORG_ID, workflowSearchAttributes } from './search-attributes.ts';

export function cleanupScheduleId(config: Pick<Config, 'temporal'>): string {
  return `${config.temporal.schedulePrefix}-cleanup-idempotency`;
}

export function domainRecheckScheduleId(config: Pick<Config, 'temporal'>): string {
  return `${config.temporal.schedulePrefix}-recheck-domains`;
}

export function uploadsCleanupScheduleId(config: Pick<Config, 'temporal'>): string {
  return `${config.temporal.schedulePrefix}-cleanup-uploads`;
}

/**
 * The hourly deletion of attachment uploads unused for 7 days (the workflow's default
 * retention); never two at once.
 */
function uploadsCleanupSchedule(config: Pick<Config, 'temporal'>): ScheduleOptions {
  return {
    scheduleId: uploadsCleanupScheduleId(config),
    spec: { intervals: [{ every: '1h' }] },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1h' },
    action: {
      type: 'startWorkflow',
      workflowType: 'cleanupUploads' satisfies keyof typeof workflows,
      args: [{}],
      taskQueue: config.temporal.taskQueues.email,
      workflowExecutionTimeout: '1 hour',
      typedSearchAttributes: workflowSearchAttributes(PLATFORM_ORG_ID, 'maintenance'),
    },
    typedSearchAttributes: workflowSearchAttributes(PLATFORM_ORG_ID, 'maintenance'),
  };
}

/**
 * The daily DNS re-check of verified and attention domains (00:00 UTC; a missed day is caught
 * up within 6 h; never two at once).
 */
function domainRecheckSchedule(config: Pick<Config, 'temporal'>): ScheduleOptions {
  return {
    scheduleId: domainRecheckScheduleId(config),
    spec: { intervals: [{ every: '1d' }] },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '6h' },
    action: {
      type: 'startWorkflow',
      workflowType: 'recheckDomains' satisfies keyof typeof workflows,
      taskQueue: config.temporal.taskQueues.email,
      workflowExecutionTimeout: '6 hours',
      typedSearchAttributes: workflowSearchAttributes(PLATFORM_ORG_ID, 'maintenance'),
    },
    typedSearchAttributes: workflowSearchAttributes(PLATFORM_ORG_ID, 'maintenance'),
  };
}

/** Creates a schedule unless one with its id exists; returns the ids it created. */
async function createIfMissing(client: Client, options: ScheduleOptions): Promise<string[]> {
  try {
    await client.schedule.create(options);
    return [options.scheduleId];
  } catch (error) {
    if (error instanceof ScheduleAlreadyRunning) return [];
    throw error;
  }
}

/**
 * Creates Herald's Temporal Schedules when missing. Runs at every worker start, so a new
 * deployment (or a wiped dev server) gets them without an operator step. The idempotency
 * cleanup runs hourly and once at creation, the upload cleanup hourly, the domain re-check
 * daily; overlapping runs are skipped.
 */
export async function ensureSchedules(
  client: Client,
  config: Pick<Config, 'temporal'>,
): Promise<{ created: string[] }> {
  const scheduleId = cleanupScheduleId(config);
  const created = [
    ...(await createIfMissing(client, domainRecheckSchedule(config))),
    ...(await createIfMissing(client, uploadsCleanupSchedule(config))),
  ];
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
    return { created: [scheduleId, ...created] };
  } catch (error) {
    if (error instanceof ScheduleAlreadyRunning) return { created };
    throw error;
  }
}
