import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTransport, type SentMessageInfo } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Event, InboundMessage, InboxAttachment, InboxMessage } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { readBlob } from '../../src/blob/blob-store.ts';
import { createFsBlobStore } from '../../src/blob/fs-blob-store.ts';
import { loadConfig } from '../../src/config.ts';
import { waitFor, type Service } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { startSmtp } from '../../src/main-smtp.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import { installTemporalLogging, startWorker } from '../../src/worker.ts';
import { createOrg } from '../support/factories.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';
import { spawnWorkerProcess } from '../support/worker-process.ts';

const logger = createLogger('warn');

describe('inbound ingestion survives outages', () => {
  let stack: TestStack;
  let blobDir: string;
  let orgId: string;
  const workers: Service[] = [];

  const inbox = () => scopeToOrg(stack.orm.em, orgId);
  const inboundRow = (id: string) => stack.orm.em.fork().findOne(InboundMessage, { id });

  async function send(port: number, mail: Parameters<ReturnType<typeof createTransport>['sendMail']>[0]): Promise<string> {
    const info = (await createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true }).sendMail(mail)) as SentMessageInfo;
    const id = /queued as ([a-f0-9]{24})/.exec(info.response ?? '')?.[1];
    expect(id, info.response).toBeDefined();
    return id!;
  }

  function ingested(id: string): Promise<InboundMessage> {
    return waitFor(
      `inbound ${id} to be ingested`,
      async () => {
        const row = await inboundRow(id);
        return row?.status === 'ingested' ? row : undefined;
      },
      90_000,
      200,
    );
  }

  beforeAll(async () => {
    installTemporalLogging(logger);
    blobDir = await mkdtemp(join(tmpdir(), 'herald-recovery-'));
    stack = await createTestStack({ BLOB_DIR: blobDir });
    orgId = (await createOrg(stack.orm)).org.id;
    await createDomainsService({ orm: stack.orm, encryptionKey: stack.config.encryptionKey }).addDomain({
      orgId,
      domain: 'acme.example',
      verified: true,
    });
  }, 60_000);

  afterAll(async () => {
    for (const worker of workers) await worker.stop();
    await stack.close();
    await rm(blobDir, { recursive: true, force: true });
  });

  it('answers 250 while Temporal is unreachable, and the worker’s reconciler ingests the message later', async () => {
    // The smtp process talks to a Temporal frontend that is not there.
    const offline = loadConfig({ ...stack.env, TEMPORAL_ADDRESS: '127.0.0.1:1' });
    const smtp = await startSmtp(offline, createLogger('silent'));
    let id: string;
    try {
      id = await send(smtp.port, {
        from: 'early@remote.example',
        to: 'support@acme.example',
        subject: 'Temporal was down',
        text: 'still here',
      });
    } finally {
      await smtp.close();
    }
    expect((await inboundRow(id))?.status).toBe('received');

    const worker = await startWorker(stack.config, logger);
    try {
      await ingested(id);
      const message = await inbox().findOneOrFail(InboxMessage, { inboundId: id });
      expect(message).toMatchObject({ subject: 'Temporal was down', attachmentIngestStatus: 'ready' });
    } finally {
      await worker.shutdown();
    }
  }, 120_000);

  it('loses nothing when the worker is killed (SIGKILL) during ingestion: another worker completes it, once', async () => {
    const smtp = await startSmtp(stack.config, createLogger('silent'));
    const files = Array.from({ length: 4 }, (_, index) => ({ filename: `part-${index}.bin`, content: randomBytes(3_000_000) }));
    let id: string;
    try {
      // No worker is polling yet: the workflow waits in its task queue.
      id = await send(smtp.port, {
        from: 'crash@remote.example',
        to: 'support@acme.example',
        subject: 'Crash test',
        text: 'big',
        attachments: files,
      });
    } finally {
      await smtp.close();
    }

    const first = await spawnWorkerProcess(stack);
    workers.push(first);
    // Kill while the attachments are being stored: the message is recorded, still pending.
    await waitFor(
      'the inbox message to be recorded',
      async () => (await inbox().findOne(InboxMessage, { inboundId: id })) ?? undefined,
      90_000,
      10,
    );
    first.child.kill('SIGKILL');
    await first.exited;
    const atKill = await inbox().findOne(InboxMessage, { inboundId: id });
    const stageAtKill = `${(await inboundRow(id))?.status}/${atKill?.attachmentIngestStatus ?? 'no message yet'}`;

    workers.push(await spawnWorkerProcess(stack));
    const row = await ingested(id);
    expect(row.attempts).toBeGreaterThanOrEqual(1);

    const messages = await inbox().find(InboxMessage, { inboundId: id });
    expect(messages, `stage at kill: ${stageAtKill}`).toHaveLength(1);
    expect(messages[0]).toMatchObject({ attachmentIngestStatus: 'ready', attachmentsReady: true, attachmentCount: 4 });
    const attachments = await inbox().find(InboxAttachment, { messageId: messages[0]!.id }, { orderBy: { position: 'asc' } });
    expect(attachments).toHaveLength(4);
    const store = createFsBlobStore(blobDir);
    for (const [index, attachment] of attachments.entries()) {
      expect((await readBlob(store, attachment.blobKey!)).equals(files[index]!.content)).toBe(true);
    }
    const events = (await inbox().find(Event, { type: 'email.received' })).filter(
      (event) => (event.data as { message: { id: string } }).message.id === messages[0]!.id,
    );
    expect(events).toHaveLength(1);
  }, 180_000);
});
