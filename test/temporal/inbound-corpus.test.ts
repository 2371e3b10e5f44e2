import { readFile } from 'node:fs/promises';
import { createTransport } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InboundMessage, InboxMessage } from '../../db/entities/index.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { startInboundHarness, type InboundHarness } from './inbound-harness.ts';

const CORPUS = new URL('../fixtures/mail/', import.meta.url);

interface Expected {
  kind: string;
  attachments?: { count: number };
}

/**
 * Issue 7's corpus acceptance: every real-world message of test/fixtures/mail (bounces from many
 * MTAs, complaints, auto replies, odd MIME, TNEF, uuencode, ...; sources in CREDITS.md) goes
 * through the real smtp listener and the ingestion workflow, and ends recorded, settled and
 * classified as expected.json says — none lost, none failed, none left pending.
 */
describe('inbound ingestion of the real-world corpus', () => {
  let h: InboundHarness;
  let expected: Record<string, Expected>;

  beforeAll(async () => {
    h = await startInboundHarness();
    await h.startWorker();
    expected = JSON.parse(await readFile(new URL('expected.json', CORPUS), 'utf8')) as Record<string, Expected>;
  }, 120_000);
  afterAll(async () => h?.close());

  it('records, settles and classifies every message', async () => {
    const files = Object.keys(expected);
    expect(files.length).toBeGreaterThanOrEqual(100);
    const transport = createTransport({
      host: '127.0.0.1',
      port: h.smtp.port,
      secure: false,
      ignoreTLS: true,
      pool: true,
      maxConnections: 4,
    });
    const ids = new Map<string, string>();
    await Promise.all(
      files.map(async (file) => {
        const raw = await readFile(new URL(file, CORPUS));
        const info = await transport.sendMail({ envelope: { from: 'sender@corpus.example', to: ['inbox@acme.example'] }, raw });
        const id = /queued as ([a-f0-9]{24})/.exec(String(info.response))?.[1];
        expect(id, `${file}: ${info.response}`).toBeDefined();
        ids.set(file, id!);
      }),
    );
    transport.close();

    const em = () => h.stack.orm.em.fork();
    await waitFor(
      'every corpus message to be ingested',
      async () => ((await em().count(InboundMessage, { id: { $in: [...ids.values()] }, status: 'received' })) === 0 ? true : undefined),
      240_000,
      250,
    );
    const failed = await em().find(InboundMessage, { id: { $in: [...ids.values()] }, status: 'failed' });
    expect(failed.map((row) => `${row.id}: ${row.lastError}`)).toEqual([]);

    const messages = await h.inbox().find(InboxMessage, { inboundId: { $in: [...ids.values()] } });
    const byInbound = new Map(messages.map((m) => [m.inboundId, m]));
    const problems: string[] = [];
    for (const [file, id] of ids) {
      const message = byInbound.get(id);
      const want = expected[file]!;
      if (!message) {
        problems.push(`${file}: no inbox message`);
        continue;
      }
      if (!message.attachmentsReady || message.attachmentIngestStatus === 'pending') problems.push(`${file}: still pending`);
      if (message.attachmentIngestStatus === 'partial_failure')
        problems.push(`${file}: partial_failure ${JSON.stringify(message.failedAttachments)}`);
      if (message.kind !== want.kind) problems.push(`${file}: kind ${message.kind}, expected ${want.kind}`);
      if (want.attachments && message.attachmentCount !== want.attachments.count) {
        problems.push(`${file}: ${message.attachmentCount} attachments, expected ${want.attachments.count}`);
      }
    }
    expect(problems).toEqual([]);
  }, 300_000);
});
