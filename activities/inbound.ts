import { drainContext } from './drain-context.ts';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { DrainSummary } from '../workflows/queue-actor.ts';
import type { InboundIntakeInput } from '../workflows/inbound-intake.ts';
import type { BlobStore } from '../src/blob/blob-store.ts';
import type { Config } from '../src/config.ts';
import type { Logger } from '../src/logger.ts';
import { createInboundIngestion } from '../src/modules/inbound/ingestion.ts';
import { createIntakeDrainer } from '../src/modules/inbound/intake-drain.ts';
import { deleteExpiredRawMessages } from '../src/modules/inbound/retention.ts';
import type { InboundReportHooks } from '../src/modules/inbound/reports-hook.ts';
import type { QueueWakes } from '../src/queue/wakes.ts';
import type { AutomationWaker } from '../src/modules/automations/automation-wake.ts';

export interface InboundActivityDeps {
  orm: MikroORM;
  blobs: BlobStore | null;
  config: Pick<Config, 'bounceDomain' | 'dns' | 'smtp' | 'queues' | 'encryptionKeys'>;
  queueWakes: QueueWakes;
  /** Bounce/complaint classification and its effects; without it every message is kind `message`. */
  reports?: InboundReportHooks | undefined;
  logger: Logger;
  /** Wakes the automations a reply gave runs or events. */
  wakeAutomations?: AutomationWaker | undefined;
}

/**
 * Inbound ingestion activities (src/modules/inbound/ingestion.ts), all idempotent. drainInbound
 * is the inbound actor's one activity: it claims due raw messages and runs each through the
 * steps (src/modules/inbound/intake-drain.ts), heartbeating while it works.
 * deleteExpiredInboundRaw is the raw-message retention's (workflows/inbound.ts).
 */
export function createInboundActivities(deps: InboundActivityDeps) {
  const ingestion = createInboundIngestion(deps);
  const drainer = createIntakeDrainer({ orm: deps.orm, config: deps.config, ingestion, wakes: deps.queueWakes, logger: deps.logger });
  return {
    async drainInbound(_input: InboundIntakeInput): Promise<DrainSummary> {
      return drainer.drain(drainContext());
    },

    /**
     * Deletes the raw bytes of one batch of messages ingested longer ago than the configured
     * retention (INBOUND_RAW_RETENTION_DAYS; none when it is 0 or no blob store is configured).
     */
    async deleteExpiredInboundRaw(input: { batchSize: number }): Promise<{ deleted: number }> {
      if (!deps.blobs) return { deleted: 0 };
      return deleteExpiredRawMessages(deps.orm, deps.blobs, { retentionMs: deps.config.smtp.rawRetentionMs, batchSize: input.batchSize });
    },
  };
}

export type InboundActivities = ReturnType<typeof createInboundActivities>;
