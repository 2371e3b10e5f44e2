import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTransport, type SendMailOptions, type SentMessageInfo } from 'nodemailer';
import { expect } from 'vitest';
import { InboundMessage, InboxMessage } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { createFsBlobStore } from '../../src/blob/fs-blob-store.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { startSmtp } from '../../src/main-smtp.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { createOrg } from '../support/factories.ts';
import { createTestStack } from '../support/stack.ts';

export const INBOUND_FIXTURES = new URL('../smtp/fixtures/', import.meta.url);
export const BOUNCE_DOMAIN = 'bounces.ingest.test';

/**
 * The inbound pipeline for a test file: its own stack and blob directory, two workspaces
 * (`acme.example`, `other.example`), the real smtp listener, and on request an in-process worker.
 */
export async function startInboundHarness(env: Record<string, string> = {}) {
  const logger = createLogger('warn');
  installTemporalLogging(logger);
  const blobDir = await mkdtemp(join(tmpdir(), 'herald-inbound-'));
  const stack = await createTestStack({ BLOB_DIR: blobDir, BOUNCE_DOMAIN, ...env });
  const domains = createDomainsService({ orm: stack.orm, encryptionKey: stack.config.encryptionKey });
  const orgId = (await createOrg(stack.orm)).org.id;
  const otherOrgId = (await createOrg(stack.orm)).org.id;
  await domains.addDomain({ orgId, domain: 'acme.example', verified: true });
  await domains.addDomain({ orgId: otherOrgId, domain: 'other.example', verified: true });
  const smtp = await startSmtp(stack.config, createLogger('silent'));
  let worker: RunningWorker | null = null;

  const inbox = (org = orgId) => scopeToOrg(stack.orm.em, org);

  return {
    stack,
    smtp,
    blobDir,
    orgId,
    otherOrgId,
    blobs: () => createFsBlobStore(blobDir),
    inbox,

    async startWorker(): Promise<void> {
      worker ??= await startWorker(stack.config, logger);
    },

    /** Sends over real SMTP; resolves with the raw message id from the 250 reply. */
    async send(mail: SendMailOptions, transportOptions: Record<string, unknown> = {}): Promise<string> {
      const transport = createTransport({ host: '127.0.0.1', port: smtp.port, secure: false, ignoreTLS: true, ...transportOptions });
      const info = (await transport.sendMail(mail)) as SentMessageInfo;
      const id = /queued as ([a-f0-9]{24})/.exec(info.response ?? '')?.[1];
      expect(id, info.response).toBeDefined();
      return id!;
    },

    /** The inbox message of a raw message in a workspace, once its attachments are settled. */
    settled(inboundId: string, org = orgId): Promise<InboxMessage> {
      return waitFor(
        `inbound ${inboundId} to settle in ${org}`,
        async () => {
          const message = await inbox(org).findOne(InboxMessage, { inboundId });
          return message?.attachmentsReady ? message : undefined;
        },
        60_000,
        100,
      );
    },

    /** The raw message row once ingestion has ended (ingested or failed). */
    ended(inboundId: string): Promise<InboundMessage> {
      return waitFor(
        `inbound ${inboundId} to end`,
        async () => {
          const row = await stack.orm.em.fork().findOne(InboundMessage, { id: inboundId });
          return row && row.status !== 'received' ? row : undefined;
        },
        60_000,
        100,
      );
    },

    async close(): Promise<void> {
      await worker?.shutdown();
      await smtp.close();
      await stack.close();
      await rm(blobDir, { recursive: true, force: true });
    },
  };
}

export type InboundHarness = Awaited<ReturnType<typeof startInboundHarness>>;
