import { log, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';

const { deleteExpiredIdempotencyRecords } = proxyActivities<Activities>({
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
