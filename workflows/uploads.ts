import { log, proxyActivities } from '@temporalio/workflow';
import { deleteInBatches } from './batches.ts';

/** The activity this cleanup runs (activities/ implements it). */
export interface UploadCleanupActivities {
  deleteStaleUploads(input: { retentionMs?: number; batchSize: number }): Promise<{ deleted: number }>;
}

const { deleteStaleUploads } = proxyActivities<UploadCleanupActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '10s', maximumInterval: '5 minutes', maximumAttempts: 10 },
});

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
  const deleted = await deleteInBatches(
    (batchSize) => deleteStaleUploads({ ...(input.retentionMs !== undefined ? { retentionMs: input.retentionMs } : {}), batchSize }),
    { batchSize: 200, maxBatches: 500 },
  );
  log.info('stale attachment uploads deleted', { deleted });
  return { deleted };
}
