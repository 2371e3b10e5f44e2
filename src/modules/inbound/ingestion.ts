import { hostname } from 'node:os';
import type { MikroORM } from '@mikro-orm/postgresql';
import { InboundMessage } from '../../../db/entities/index.ts';
import type { BlobStore } from '../../blob/blob-store.ts';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import type { AutomationWaker } from '../automations/automation-wake.ts';
import { createDmarcIntake } from '../dmarc/dmarc-intake.ts';
import { createVerpSigner } from '../outbound/verp.ts';
import { settleAttachments, storeAttachments, type StoreOutcome } from './attachments.ts';
import { createAuthResolver } from './auth-results.ts';
import { markInboundIngested, type RawInbound } from './inbound-queue.repo.ts';
import { recordMessages, type RecordMessagesDeps } from './record-messages.ts';
import type { InboundReportHooks } from './reports-hook.ts';

export type { RecordOutcome } from './record-messages.ts';

export interface InboundIngestionDeps {
  orm: MikroORM;
  blobs: BlobStore | null;
  config: Pick<Config, 'bounceDomain' | 'dns' | 'smtp' | 'encryptionKeys'>;
  reports?: InboundReportHooks | undefined;
  logger?: Logger;
  /** Wakes automations a reply gave runs or events; without it the automation reconciler finds them. */
  wakeAutomations?: AutomationWaker | undefined;
}

/**
 * Ingestion of one raw inbound message: the steps the inbound actor's drain runs
 * (intake-drain.ts). Every step is idempotent: messages are unique per (raw message,
 * workspace) and attachments per (message, position), so a retry after a crash finishes the
 * work without duplicating it. Recording is record-messages.ts (one inbox message per
 * workspace: record-inbox-message.ts); this factory wires the resolver, VERP signer and DMARC intake.
 */
export function createInboundIngestion(deps: InboundIngestionDeps) {
  const { orm, config } = deps;
  const blobStore = (): BlobStore => {
    if (!deps.blobs) throw new Error('no blob store configured (BLOB_DIR is empty)');
    return deps.blobs;
  };
  const recordDeps: RecordMessagesDeps = {
    orm,
    config,
    reports: deps.reports,
    logger: deps.logger,
    wakeAutomations: deps.wakeAutomations,
    blobStore,
    resolver: createAuthResolver(config),
    verp: config.encryptionKeys.length > 0 ? createVerpSigner(config.encryptionKeys) : null,
    dmarc: createDmarcIntake({ orm, logger: deps.logger }),
    mta: config.smtp.host === '0.0.0.0' || config.smtp.host === '' ? hostname() : config.smtp.host,
  };

  return {
    /** See record-messages.ts recordMessages. */
    recordMessages: (inboundId: string, options: { final?: boolean; started?: RawInbound } = {}) =>
      recordMessages(recordDeps, inboundId, options),

    /** Stores the attachments of the raw message's pending inbox messages; see attachments.ts. */
    async storeAttachments(inboundId: string, options: { final: boolean }): Promise<StoreOutcome> {
      const inbound = await orm.em.fork().findOne(InboundMessage, { id: inboundId });
      if (!inbound) return { stored: 0, failed: 0, settled: 0 };
      return storeAttachments({ orm, blobs: blobStore(), inbound, final: options.final });
    },

    /** Ends ingestion successfully (recordMessages does it itself when nothing was pending). */
    markIngested: (inboundId: string): Promise<void> => markInboundIngested(orm.em.fork(), inboundId),

    /**
     * Ends ingestion as failed (retries exhausted, or no workspace reached): any inbox message
     * still pending settles with its unstored attachments as failed, so nothing stays pending.
     */
    async markFailed(inboundId: string, reason: string): Promise<void> {
      await settleAttachments(orm, inboundId);
      await orm.em
        .fork()
        .nativeUpdate(InboundMessage, { id: inboundId }, { status: 'failed', lastError: reason.slice(0, 1024), updatedAt: new Date() });
    },
  };
}

export type InboundIngestion = ReturnType<typeof createInboundIngestion>;
