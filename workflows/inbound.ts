import { log, proxyActivities } from '@temporalio/workflow';
import { deleteInBatches } from './batches.ts';

/** The activity this cleanup runs (activities/ implements it). */
export interface InboundCleanupActivities {
  deleteExpiredInboundRaw(input: { batchSize: number }): Promise<{ deleted: number }>;
}

const { deleteExpiredInboundRaw } = proxyActivities<InboundCleanupActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '10s', maximumInterval: '5 minutes', maximumAttempts: 10 },
});

/**
 * cleanupInboundRaw — started by the Temporal Schedule `<prefix>-cleanup-inbound-raw` (daily).
 * Deletes the raw bytes of inbound messages ingested more than INBOUND_RAW_RETENTION_DAYS ago
 * (the worker's setting), in batches; inbox messages and their attachments stay. Safe to
 * overlap or repeat.
 */
export async function cleanupInboundRaw(): Promise<{ deleted: number }> {
  const deleted = await deleteInBatches((batchSize) => deleteExpiredInboundRaw({ batchSize }), { batchSize: 200, maxBatches: 500 });
  log.info('raw inbound messages past retention deleted', { deleted });
  return { deleted };
}
