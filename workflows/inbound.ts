import { log, proxyActivities, proxyLocalActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { deleteInBatches } from './batches.ts';
import { HeraldOrgId } from './search-attributes.ts';

/** Attempts of each ingestion step before the raw message is marked failed. */
const MAX_ATTEMPTS = 6;

/**
 * The steps are local activities: they run in the worker that runs the workflow task and are
 * recorded as markers, so a message costs the Temporal server a start and a workflow task or
 * two instead of a round trip per step (about twice the throughput on the dev server). A worker
 * lost mid-step is noticed when the workflow task times out; another worker runs the step again
 * (each step is idempotent).
 */
const { recordInboundMessages, storeInboundAttachments } = proxyLocalActivities<Activities>({
  // Parsing and storing up to 25 MB.
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: MAX_ATTEMPTS },
});

const { finishInbound } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', maximumInterval: '1 minute' },
});

export interface IngestInboundInput {
  inboundId: string;
}

export type IngestInboundResult = 'ingested' | 'failed' | 'settled' | 'missing';

/** The activity's own error message rather than Temporal's "Activity task failed". */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? error.cause.message : error.message;
}

/**
 * ingestInbound — id `inbound:<inboundId>`, task queue herald-inbound, HeraldKind = inbound,
 * HeraldOrgId = `platform` until routing finds exactly one workspace.
 * Turns one raw inbound message into inbox messages: record them (parse, authentication,
 * classification, routing, threading, email.received; attachments pending), store their
 * attachments (→ ready / partial_failure); the last of these steps marks the raw message
 * ingested (one step for a message without attachments). Each step is
 * idempotent and retried with backoff; when retries run out the raw message is marked failed
 * with the error and nothing is left pending.
 *
 * Legacy: nothing starts it any more; the inbound actor (inbound-intake.ts) drains raw messages
 * as rows. It stays registered so that runs started before the upgrade finish under their own
 * code (their message is also due for the actor; the steps are idempotent, so whichever comes
 * second finds the work done).
 */
export async function ingestInbound(input: IngestInboundInput): Promise<IngestInboundResult> {
  try {
    const recorded = await recordInboundMessages({ inboundId: input.inboundId, finalAttempt: MAX_ATTEMPTS });
    if (recorded.status === 'settled' || recorded.status === 'missing') return recorded.status;
    if (recorded.status === 'unroutable') {
      await finishInbound({ inboundId: input.inboundId, outcome: 'failed', reason: 'no workspace owns any recipient' });
      return 'failed';
    }
    // Started as `platform`; a message that reached one workspace is filed under it.
    if (recorded.orgIds.length === 1) {
      upsertSearchAttributes([{ key: HeraldOrgId, value: recorded.orgIds[0]! }]);
    }
    // Steps that mark the raw message ingested themselves say so (`ingested`); results recorded
    // in histories from before they did lack it, and those runs go on to finishInbound as then.
    if (recorded.ingested) return 'ingested';
    if (recorded.attachmentsPending) {
      const stored = await storeInboundAttachments({ inboundId: input.inboundId, finalAttempt: MAX_ATTEMPTS });
      if (stored.ingested) return 'ingested';
    }
    await finishInbound({ inboundId: input.inboundId, outcome: 'ingested' });
    return 'ingested';
  } catch (error) {
    log.warn('inbound ingestion failed', { inboundId: input.inboundId, error: describe(error) });
    await finishInbound({ inboundId: input.inboundId, outcome: 'failed', reason: describe(error) });
    return 'failed';
  }
}

const { deleteExpiredInboundRaw } = proxyActivities<Activities>({
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
