import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InboundMessage, InboxMessage } from '../../db/entities/index.ts';
import { createLogger } from '../../src/logger.ts';
import { createInboundIngestion } from '../../src/modules/inbound/ingestion.ts';
import { createIntakeDrainer, inboundRetryDelay, INBOUND_MAX_ATTEMPTS } from '../../src/modules/inbound/intake-drain.ts';
import { startQueueWakes, type QueueWakes } from '../../src/queue/wakes.ts';
import { startInboundHarness, type InboundHarness } from './inbound-harness.ts';

/**
 * The inbound actor's drain (the body of its activity) on real rows, blobs and PostgreSQL, with
 * no worker running: a failed attempt puts the raw message back with a backoff and its error,
 * the last attempt marks it failed and settles what is pending. The drain lingers 0 ms here, so
 * one drain is one attempt per due message.
 */
describe('inbound actor drain: retries and the last attempt', () => {
  let h: InboundHarness;
  let wakes: QueueWakes;

  beforeAll(async () => {
    h = await startInboundHarness({ QUEUE_DRAIN_LINGER_MS: '0' });
    wakes = startQueueWakes({ databaseUrl: h.stack.config.database.url, logger: createLogger('silent') });
  }, 60_000);

  afterAll(async () => {
    await wakes?.stop();
    await h?.close();
  });

  function drainOnce() {
    const logger = createLogger('silent');
    const ingestion = createInboundIngestion({ orm: h.stack.orm, blobs: h.blobs(), config: h.stack.config, logger });
    const drainer = createIntakeDrainer({ orm: h.stack.orm, config: h.stack.config, ingestion, wakes, logger });
    return drainer.drain({ heartbeat: () => {}, signal: new AbortController().signal });
  }

  const row = (id: string) => h.stack.orm.em.fork().findOneOrFail(InboundMessage, { id });

  it('backs off 1 s doubling to at most 1 min', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 10].map(inboundRetryDelay)).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]);
  });

  it('puts a message whose attempt failed back on the queue after the backoff, with the error shown', async () => {
    const id = await h.send({ from: 'a@remote.example', to: 'support@acme.example', subject: 'Lost bytes', text: 'x' });
    await h.blobs().delete((await row(id)).blobKey);
    const before = Date.now();

    const summary = await drainOnce();

    const after = await row(id);
    expect(after).toMatchObject({ status: 'received', attempts: 1 });
    expect(after.lastError).toMatch(/^blob not found: inbound\//);
    expect(after.nextAttemptAt!.getTime()).toBeGreaterThanOrEqual(before + inboundRetryDelay(1) - 50);
    expect(summary).toMatchObject({ failed: 1, delivered: 0, exhausted: 0, state: 'failing', open: 1 });
    expect(Math.abs(summary.nextDueAt! - after.nextAttemptAt!.getTime())).toBeLessThanOrEqual(1);
    await h.stack.orm.em.fork().nativeUpdate(InboundMessage, { id }, { status: 'failed' });
  });

  it('marks the message failed on its last attempt, settling its pending inbox message as partial_failure', async () => {
    const id = await h.send({
      from: 'b@remote.example',
      to: 'support@acme.example',
      subject: 'Last try',
      text: 'x',
      attachments: [{ filename: 'a.bin', content: Buffer.alloc(10_000, 1) }],
    });
    // Recorded (pending) by an earlier attempt; the next is the last one, and its bytes are gone.
    const ingestion = createInboundIngestion({
      orm: h.stack.orm,
      blobs: h.blobs(),
      config: h.stack.config,
      logger: createLogger('silent'),
    });
    await ingestion.recordMessages(id);
    await h.stack.orm.em.fork().nativeUpdate(InboundMessage, { id }, { attempts: INBOUND_MAX_ATTEMPTS - 1, nextAttemptAt: new Date() });
    await h.blobs().delete((await row(id)).blobKey);

    const summary = await drainOnce();

    const after = await row(id);
    expect(after.status).toBe('failed');
    expect(after.attempts).toBe(INBOUND_MAX_ATTEMPTS);
    expect(after.lastError).toMatch(/^blob not found: inbound\//);
    expect(summary).toMatchObject({ exhausted: 1, failed: 0, open: 0, state: 'idle' });
    const message = await h.inbox().findOneOrFail(InboxMessage, { inboundId: id });
    expect(message).toMatchObject({ attachmentIngestStatus: 'partial_failure', attachmentsReady: true });
  });
});
