import { log, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';

const { deleteStaleUploads } = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '10s', maximumInterval: '5 minutes', maximumAttempts: 10 },
});

const BATCH_SIZE = 200;
/** Bounds one run's history; whatever is left waits for the next hourly run. */
const MAX_BATCHES = 500;

export interface CleanupUploadsInput {
  /** How long an upload may stay unused; the activity's default (7 days) when absent. */
  retentionMs?: number;
}

/**
 * cleanupUploads — started by the Temporal Schedule `<prefix>-cleanup-uploads` (hourly).
 * Deletes attachment uploads unused for the retention period (7 days: since their last
 * reference, or since creation when never referenced, pending ones included) that no open
 * email still reads, blob then row, in batches. Safe to overlap or repeat.
 */
export async function cleanupUploads(input: CleanupUploadsInput = {}): Promise<{ deleted: number }> {
  let deleted = 0;
  for (let batch = 0; batch < MAX_BATCHES; batch += 1) {
    const result = await deleteStaleUploads({ ...(input.retentionMs !== undefined ? { retentionMs: input.retentionMs } : {}), batchSize: BATCH_SIZE });
    deleted += result.deleted;
    if (result.deleted < BATCH_SIZE) break;
  }
  log.info('stale attachment uploads deleted', { deleted });
  return { deleted };
}
