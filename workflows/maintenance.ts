import { log, proxyActivities } from '@temporalio/workflow';

/** HeraldKind of the scheduled cleanups (idempotency records, uploads, raw inbound). */
export const MAINTENANCE_KIND = 'maintenance';

/** The activity this cleanup runs (activities/ implements it). */
export interface MaintenanceActivities {
  deleteExpiredIdempotencyRecords(): Promise<{ deleted: number }>;
}

const { deleteExpiredIdempotencyRecords } = proxyActivities<MaintenanceActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '10s', maximumInterval: '5 minutes', maximumAttempts: 10 },
});

/**
 * cleanupIdempotencyRecords — started by the Temporal Schedule `<prefix>-cleanup-idempotency`.
 * Deletes idempotency records past their 24-hour window. Safe to overlap or repeat.
 */
export async function cleanupIdempotencyRecords(): Promise<{ deleted: number }> {
  const result = await deleteExpiredIdempotencyRecords();
  log.info('expired idempotency records deleted', { deleted: result.deleted });
  return result;
}
