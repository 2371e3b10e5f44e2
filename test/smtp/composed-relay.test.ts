import { generateKeyPairSync } from 'node:crypto';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { simpleParser } from 'mailparser';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { dkimDnsValue } from '../../src/modules/domains/dkim.fns.ts';
import { MAX_COMPOSED_ELSEWHERE_CHARS } from '../../src/modules/sends/message-composer.ts';
import { composedElsewhere, createRelay, type Relay } from '../../src/modules/sends/relay.ts';
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
    expect(logLines.map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual(['message not composed on the offload thread; composed in the event loop instead']);
  });
});
