import { generateKeyPairSync } from 'node:crypto';
import { Readable } from 'node:stream';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { simpleParser } from 'mailparser';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { dkimDnsValue } from '../../src/modules/domains/dkim.fns.ts';
import { MAX_COMPOSED_ELSEWHERE_CHARS } from '../../src/modules/outbound/message-composer.ts';
import { composedElsewhere, createRelay, type Relay } from '../../src/modules/outbound/relay.ts';
import { createThreadedRelay } from '../../src/modules/outbound/relay-thread.ts';
import { createOffloadPool } from '../../src/offload/offload-pool.ts';
import { messageProblems } from '../support/message-quality.ts';
import { startTlsRelay } from '../support/tls-relay.ts';

const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PRIVATE_KEY = keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const PUBLIC_KEY = keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();
const ENVELOPE = { from: 'bounce+1@bounces.example.com', to: ['reader@example.net'] };

function message(overrides: Partial<Mail.Options> = {}): Mail.Options {
  return {
    from: { name: 'Shop', address: 'shop@example.com' },
    to: ['reader@example.net'],
    subject: 'Ünïcode subject, long enough to be folded by the composer when it encodes it as words',
    html: '<p>Hello <b>reader</b></p>',
    text: 'Hello reader',
    messageId: '<composed-1@example.com>',
    date: new Date('2026-11-26T00:00:00Z'),
    headers: { 'List-Unsubscribe': '<https://herald.example/u/abc>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
    dkim: { domainName: 'example.com', keySelector: 'herald', privateKey: PRIVATE_KEY },
    ...overrides,
  };
}

async function dkimResult(raw: string) {
  const record = dkimDnsValue(PUBLIC_KEY);
  const verified = await dkimVerify(Buffer.from(raw), {
    resolver: (name: string, type: string) =>
      type === 'TXT' && name === 'herald._domainkey.example.com'
        ? Promise.resolve([[record]])
        : Promise.reject(Object.assign(new Error('not found'), { code: 'ENOTFOUND' })),
  });
  return verified.results[0]?.status?.result;
}

/** Messages composed and DKIM-signed on the offload thread, sent as bytes by a real pooled relay to a real smtp-server. */
describe('a relay whose messages are composed on the offload thread', () => {
  const pool = createOffloadPool();
  const logLines: string[] = [];
  const logger = createLogger('info', {}, (line) => logLines.push(line));
  let sink: Awaited<ReturnType<typeof startTlsRelay>>;
  let inner: Relay;
  let composed = 0;
  let relay: Relay;

  beforeAll(async () => {
    sink = await startTlsRelay({ certificate: null });
    inner = createRelay({ url: `smtp://127.0.0.1:${sink.port}`, poolSize: 1, tls: { policy: 'none', source: 'SMTP_RELAY_TLS' }, logger });
    relay = composedElsewhere(
      inner,
      (mail, envelope) => {
        composed += 1;
        return pool.composeMessage(mail, envelope);
      },
      logger,
    );
  });

  afterAll(async () => {
    relay.close();
    await pool.close();
    await sink.close();
  });

  it('delivers the message the relay itself would have built, DKIM signature verifying', async () => {
    const before = composed;
    const result = await relay.send(message(), ENVELOPE);
    expect(result.kind === 'recipients' && result.recipients.map((r) => r.accepted)).toEqual([true]);
    expect(composed).toBe(before + 1);
    const composedRaw = sink.received.at(-1)!.raw;
    await inner.send(message(), ENVELOPE);
    const directRaw = sink.received.at(-1)!.raw;

    for (const raw of [composedRaw, directRaw]) {
      expect(await messageProblems(Buffer.from(raw))).toEqual([]);
      expect(await dkimResult(raw)).toBe('pass');
    }
    const [viaThread, direct] = await Promise.all([simpleParser(composedRaw), simpleParser(directRaw)]);
    for (const field of ['subject', 'html', 'text', 'messageId'] as const) expect(viaThread[field]).toEqual(direct[field]);
    expect(composedRaw).toContain('\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n');
    expect(sink.received.at(-2)!.to).toEqual(ENVELOPE.to);
  });

  it('leaves a message with attachments (streams) to the relay itself', async () => {
    const before = composed;
    const result = await relay.send(message({ attachments: [{ filename: 'a.txt', content: 'attached' }] }), ENVELOPE);
    expect(result.kind === 'recipients' && result.recipients.map((r) => r.accepted)).toEqual([true]);
    expect(composed).toBe(before);
    const parsed = await simpleParser(sink.received.at(-1)!.raw);
    expect(parsed.attachments.map((a) => a.content.toString())).toEqual(['attached']);
    expect(await dkimResult(sink.received.at(-1)!.raw)).toBe('pass');
  });

  it('leaves a message whose bodies are over 256,000 characters to the relay itself', async () => {
    const before = composed;
    const html = `<p>${'x'.repeat(MAX_COMPOSED_ELSEWHERE_CHARS)}</p>`;
    const result = await relay.send(message({ html, text: 'short' }), ENVELOPE);
    expect(result.kind === 'recipients' && result.recipients.map((r) => r.accepted)).toEqual([true]);
    expect(composed).toBe(before);
    expect((await simpleParser(sink.received.at(-1)!.raw)).html).toBe(html);
    await relay.send(message({ html: `<p>${'x'.repeat(MAX_COMPOSED_ELSEWHERE_CHARS - 20)}</p>`, text: 'short' }), ENVELOPE);
    expect(composed).toBe(before + 1);
  });

  it('composes in the event loop when the thread fails, and says so once per message', async () => {
    const failing = composedElsewhere(inner, () => Promise.reject(new Error('offload worker exited with 1')), logger);
    const before = sink.received.length;
    logLines.length = 0;
    const result = await failing.send(message(), ENVELOPE);
    expect(result.kind === 'recipients' && result.recipients.map((r) => r.accepted)).toEqual([true]);
    expect(sink.received.length).toBe(before + 1);
    expect(await dkimResult(sink.received.at(-1)!.raw)).toBe('pass');
    expect(logLines.map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual([
      'message not composed on the offload thread; composed in the event loop instead',
    ]);
  });
});

/** The pooled relay on its own thread (the worker's relay): composing, signing and the SMTP sessions there. */
describe('the relay thread', () => {
  const logLines: string[] = [];
  const logger = createLogger('info', {}, (line) => logLines.push(line));
  let sink: Awaited<ReturnType<typeof startTlsRelay>>;
  let relay: Relay;

  beforeAll(async () => {
    sink = await startTlsRelay({ certificate: null });
    relay = createThreadedRelay({
      settings: { url: `smtp://127.0.0.1:${sink.port}`, poolSize: 2, tls: { policy: 'none', source: 'SMTP_RELAY_TLS' } },
      logger,
    });
  });

  afterAll(async () => {
    relay.close();
    await sink.close();
  });

  it('delivers messages composed and DKIM-signed on the thread, many at once', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => relay.send(message({ messageId: `<thread-${i}@example.com>` }), ENVELOPE)),
    );
    expect(results.every((r) => r.kind === 'recipients' && r.recipients.every((x) => x.accepted))).toBe(true);
    const raws = sink.received.filter((m) => /thread-\d+@example\.com/.test(m.raw)).map((m) => m.raw);
    expect(raws).toHaveLength(20);
    expect(await dkimResult(raws[0]!)).toBe('pass');
    expect(await messageProblems(Buffer.from(raws[0]!))).toEqual([]);
  });

  it('composes a message with attachments (streams) before the thread and sends its bytes there', async () => {
    const result = await relay.send(
      message({
        messageId: '<thread-attached@example.com>',
        attachments: [{ filename: 'a.txt', content: Readable.from(['attached ', 'stream']) }],
      }),
      ENVELOPE,
    );
    expect(result.kind === 'recipients' && result.recipients.map((r) => r.accepted)).toEqual([true]);
    const raw = sink.received.find((m) => m.raw.includes('thread-attached@example.com'))!.raw;
    expect((await simpleParser(raw)).attachments.map((a) => a.content.toString())).toEqual(['attached stream']);
    expect(await dkimResult(raw)).toBe('pass');
  });

  it("answers an unreachable relay as a temporary failure, logged through the worker's logger", async () => {
    const closed = createThreadedRelay({
      settings: { url: 'smtp://127.0.0.1:1', poolSize: 1, tls: { policy: 'none', source: 'SMTP_RELAY_TLS' } },
      logger,
    });
    try {
      const result = await closed.send(message(), ENVELOPE);
      expect(result).toMatchObject({ kind: 'unreachable', response: expect.stringMatching(/ECONNREFUSED/) });
    } finally {
      closed.close();
    }
  });

  it('answers the messages in flight when the thread dies (here: it cannot start), and never leaves a send waiting', async () => {
    const broken = createThreadedRelay({
      settings: { url: 'not a relay url', poolSize: 1, tls: { policy: 'none', source: 'SMTP_RELAY_TLS' } },
      logger,
    });
    try {
      const results = await Promise.all([broken.send(message(), ENVELOPE), broken.send(message(), ENVELOPE)]);
      for (const result of results)
        expect(result).toMatchObject({ kind: 'unreachable', response: expect.stringMatching(/^relay thread stopped/) });
      // The next message starts a new thread (which fails the same way here).
      expect(await broken.send(message(), ENVELOPE)).toMatchObject({ kind: 'unreachable' });
    } finally {
      broken.close();
    }
  });
});
