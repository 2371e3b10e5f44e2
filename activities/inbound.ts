import { Context } from '@temporalio/activity';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { DrainSummary } from '../workflows/queue-actor.ts';
import type { InboundIntakeInput } from '../workflows/inbound-intake.ts';
import type { BlobStore } from '../src/blob/blob-store.ts';
import type { Config } from '../src/config.ts';
import type { Logger } from '../src/logger.ts';
import type { StoreOutcome } from '../src/modules/inbound/attachments.ts';
import { createInboundIngestion, type RecordOutcome } from '../src/modules/inbound/ingestion.ts';
import { createIntakeDrainer } from '../src/modules/inbound/intake-drain.ts';
import { deleteExpiredRawMessages } from '../src/modules/inbound/retention.ts';
import type { InboundReportHooks } from '../src/modules/inbound/reports-hook.ts';
import type { QueueWakes } from '../src/queue/wakes.ts';

export interface InboundActivityDeps {
  orm: MikroORM;
  blobs: BlobStore | null;
  config: Pick<Config, 'bounceDomain' | 'dns' | 'smtp' | 'queues'>;
  queueWakes: QueueWakes;
  /** Bounce/complaint classification and its effects; without it every message is kind `message`. */
  reports?: InboundReportHooks | undefined;
  logger: Logger;
}

const HEARTBEAT_EVERY_MS = 2_000;

/** Runs `work` while heartbeating, so a worker lost mid-step is noticed within the heartbeat timeout. */
async function beating<T>(work: () => Promise<T>): Promise<T> {
  const context = Context.current();
  // Local activities (as ingestInbound schedules them) do not heartbeat: the workflow task does.
  if (context.info.isLocal) return work();
  const timer = setInterval(() => context.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/**
 * Inbound ingestion activities (src/modules/inbound/ingestion.ts), all idempotent. drainInbound
 * is the inbound actor's one activity: it claims due raw messages and runs each through the
 * steps (src/modules/inbound/intake-drain.ts), heartbeating while it works. The others serve
 * only the legacy per-message ingestInbound runs started before the actor:
 * recordInboundMessages creates at most one inbox message per (raw message, workspace);
 * storeInboundAttachments stores only what is missing and, on the workflow's last attempt,
 * settles what could not be stored as partial_failure; the step that completes a message marks
 * the raw message ingested; finishInbound marks it failed (or ingested, for histories
 * recorded before the steps did).
 */
export function createInboundActivities(deps: InboundActivityDeps) {
  const ingestion = createInboundIngestion(deps);
  const drainer = createIntakeDrainer({ orm: deps.orm, config: deps.config, ingestion, wakes: deps.queueWakes, logger: deps.logger });
  return {
    async drainInbound(_input: InboundIntakeInput): Promise<DrainSummary> {
      const context = Context.current();
      return drainer.drain({ heartbeat: () => context.heartbeat(), signal: context.cancellationSignal });
    },

    /**
     * A message without attachments is complete once recorded: the raw message is marked
     * ingested in the same step (`ingested: true`), which saves the workflow a step.
     */
    async recordInboundMessages(input: { inboundId: string; finalAttempt?: number }): Promise<RecordOutcome & { ingested?: boolean }> {
      const final = input.finalAttempt !== undefined && Context.current().info.attempt >= input.finalAttempt;
      return beating(async () => {
        const recorded = await ingestion.recordMessages(input.inboundId, { final });
        if (recorded.status !== 'recorded' || recorded.attachmentsPending) return recorded;
        await ingestion.markIngested(input.inboundId);
        return { ...recorded, ingested: true };
      });
    },

    /** Stores what is missing, then marks the raw message ingested (`ingested: true`). */
    async storeInboundAttachments(input: { inboundId: string; finalAttempt: number }): Promise<StoreOutcome & { ingested?: boolean }> {
      const final = Context.current().info.attempt >= input.finalAttempt;
      return beating(async () => {
        const outcome = await ingestion.storeAttachments(input.inboundId, { final });
        await ingestion.markIngested(input.inboundId);
        return { ...outcome, ingested: true };
      });
    },

    /**
     * Deletes the raw bytes of one batch of messages ingested longer ago than the configured
     * retention (INBOUND_RAW_RETENTION_DAYS; none when it is 0 or no blob store is configured).
     */
    async deleteExpiredInboundRaw(input: { batchSize: number }): Promise<{ deleted: number }> {
      if (!deps.blobs) return { deleted: 0 };
      return deleteExpiredRawMessages(deps.orm, deps.blobs, { retentionMs: deps.config.smtp.rawRetentionMs, batchSize: input.batchSize });
    },

    async finishInbound(input: { inboundId: string; outcome: 'ingested' | 'failed'; reason?: string }): Promise<void> {
      if (input.outcome === 'ingested') await ingestion.markIngested(input.inboundId);
      else await ingestion.markFailed(input.inboundId, input.reason ?? 'ingestion failed');
    },
  };
}

export type InboundActivities = ReturnType<typeof createInboundActivities>;
