import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';
import type { Config } from '../config.ts';
import type * as workflows from '../../workflows/index.ts';
import { PLATFORM_ORG_ID, workflowSearchAttributes } from './search-attributes.ts';
import { MAINTENANCE_KIND } from '../../workflows/maintenance.ts';

export function cleanupScheduleId(config: Pick<Config, 'temporal'>): string {
  return `${config.temporal.schedulePrefix}-cleanup-idempotency`;
}

export function domainRecheckScheduleId(config: { temporal: Pick<Config['temporal'], 'schedulePrefix'> }): string {
  return `${config.temporal.schedulePrefix}-recheck-domains`;
}

export function uploadsCleanupScheduleId(config: Pick<Config, 'temporal'>): string {
  return `${config.temporal.schedulePrefix}-cleanup-uploads`;
}

export function inboundRawCleanupScheduleId(config: Pick<Config, 'temporal'>): string {
  return `${config.temporal.schedulePrefix}-cleanup-inbound-raw`;
}

/** A maintenance workflow started every `every` (never two at once, a missed run caught up within `catchupWindow`). */
function periodicMaintenance(
  config: Pick<Config, 'temporal'>,
  options: {
    scheduleId: string;
    every: string;
    catchupWindow: string;
    workflowType: keyof typeof workflows;
    taskQueue: string;
    timeout: string;
    args?: unknown[];
  },
): ScheduleOptions {
  return {
    scheduleId: options.scheduleId,
    spec: { intervals: [{ every: options.every }] },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: options.catchupWindow },
    action: {
      type: 'startWorkflow',
      workflowType: options.workflowType,
      ...(options.args ? { args: options.args } : {}),
      taskQueue: options.taskQueue,
      workflowExecutionTimeout: options.timeout,
      typedSearchAttributes: workflowSearchAttributes(PLATFORM_ORG_ID, MAINTENANCE_KIND),
    },
    typedSearchAttributes: workflowSearchAttributes(PLATFORM_ORG_ID, MAINTENANCE_KIND),
  };
}

/** The hourly deletion of attachment uploads unused for 7 days (the workflow's default retention). */
function uploadsCleanupSchedule(config: Pick<Config, 'temporal'>): ScheduleOptions {
  return periodicMaintenance(config, {
    scheduleId: uploadsCleanupScheduleId(config),
    every: '1h',
    catchupWindow: '1h',
    workflowType: 'cleanupUploads',
    args: [{}],
    taskQueue: config.temporal.taskQueue,
    timeout: '1 hour',
  });
}

/** Daily runs: a missed day is caught up within 6 h, and a run may take as long. */
const DAILY = { every: '1d', catchupWindow: '6h', timeout: '6 hours' } as const;

/** The daily DNS re-check of verified and attention domains. */
function domainRecheckSchedule(config: Pick<Config, 'temporal'>): ScheduleOptions {
  return periodicMaintenance(config, {
    ...DAILY,
    scheduleId: domainRecheckScheduleId(config),
    workflowType: 'recheckDomains',
    taskQueue: config.temporal.taskQueue,
  });
}

/** The daily deletion of raw inbound messages past INBOUND_RAW_RETENTION_DAYS (the worker's setting). */
function inboundRawCleanupSchedule(config: Pick<Config, 'temporal'>): ScheduleOptions {
  return periodicMaintenance(config, {
    ...DAILY,
    scheduleId: inboundRawCleanupScheduleId(config),
    workflowType: 'cleanupInboundRaw',
    taskQueue: config.temporal.taskQueue,
  });
}

/** Creates a schedule unless one with its id exists; returns the ids it created. */
async function createIfMissing(client: Client, options: ScheduleOptions): Promise<string[]> {
  try {
    await client.schedule.create(options);
    return [options.scheduleId];
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
    return [];
  }
}

/**
 * Creates Herald's Temporal Schedules when missing. Runs at every worker start, so a new
 * deployment (or a wiped dev server) gets them without an operator step. The idempotency
 * cleanup runs hourly and once at creation, the upload cleanup hourly, the domain re-check
 * and the raw inbound cleanup daily; overlapping runs are skipped.
 */
export async function ensureSchedules(client: Client, config: Pick<Config, 'temporal'>): Promise<{ created: string[] }> {
  const scheduleId = cleanupScheduleId(config);
  const created = [
    ...(await createIfMissing(client, domainRecheckSchedule(config))),
    ...(await createIfMissing(client, uploadsCleanupSchedule(config))),
    ...(await createIfMissing(client, inboundRawCleanupSchedule(config))),
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
        taskQueue: config.temporal.taskQueue,
        workflowExecutionTimeout: '30 minutes',
        typedSearchAttributes: workflowSearchAttributes(PLATFORM_ORG_ID, MAINTENANCE_KIND),
      },
      typedSearchAttributes: workflowSearchAttributes(PLATFORM_ORG_ID, MAINTENANCE_KIND),
    });
    return { created: [scheduleId, ...created] };
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
    return { created };
  }
}
