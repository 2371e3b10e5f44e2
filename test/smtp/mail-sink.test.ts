import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { createTransport, type SendMailOptions } from 'nodemailer';
import { SMTPServer } from 'smtp-server';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/dev/ports.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { startMailSink, SINK_MAX_MESSAGE_BYTES, type MailSink } from '../../src/dev/mail-sink.ts';
import { createLogger } from '../../src/logger.ts';

const FIXTURE = readFileSync(new URL('./fixtures/mail-sink-byte-exact.eml', import.meta.url));
const SIM = 'simulator.herald.test';

interface SmtpFailure {
  code?: string;
  responseCode?: number;
  response?: string;
}

interface SendResult {
  accepted: string[];
  rejected: string[];
  rejectedErrors?: SmtpFailure[];
}

/** Sends one message to the sink over loopback, the way Herald's relay client would. */
async function send(
  port: number,
  mail: SendMailOptions,
  auth?: { user: string; pass: string; method: 'PLAIN' | 'LOGIN' },
): Promise<SendResult> {
  const transport = createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ...(auth ? { auth: { user: auth.user, pass: auth.pass }, authMethod: auth.method } : {}),
  });
  try {
    return await transport.sendMail(mail);
  } finally {
    transport.close();
  }
}

const sendFailure = (port: number, mail: SendMailOptions) =>
  send(port, mail).then(
    () => {
      throw new Error('expected the send to fail');
    },
    (error: unknown) => error as SmtpFailure,
  );

let counter = 0;
const mail = (to: string | string[], extra: Partial<SendMailOptions> = {}): SendMailOptions => ({
  from: `sender${++counter}@example.com`,
  to,
  subject: `message ${counter}`,
  text: 'hello',
  ...extra,
});

/** A loopback smtp-server standing in for Herald's inbound MX, keeping what it receives. */
async function startFeedbackReceiver() {
  const received: { mailFrom: string; rcptTo: string[]; raw: Buffer }[] = [];
  const server = new SMTPServer({
    hideSTARTTLS: true,
    authOptional: true,
    disabledCommands: ['AUTH'],
    disableReverseLookup: true,
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        received.push({
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.server.address() as AddressInfo).port,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('mail sink (SMTP)', () => {
  let sink: MailSink;
  let feedback: Awaited<ReturnType<typeof startFeedbackReceiver>>;

  beforeAll(async () => {
    feedback = await startFeedbackReceiver();
    sink = await startMailSink({ smtpPort: 0, feedback: { host: '127.0.0.1', port: feedback.port } });
  });
  afterAll(async () => {
    await sink.close();
    await feedback.close();
  });

  it('keeps a message byte for byte and records its envelope, decoded subject and Message-ID', async () => {
    const info = await send(sink.smtpPort, {
      envelope: { from: 'bounce+abc123@bounces.example.com', to: ['delivered@simulator.herald.test', 'someone@anywhere.example'] },
      raw: FIXTURE,
    });
    expect(info.accepted).toHaveLength(2);
    const kept = await sink.waitFor((m) => m.messageId === 'byte-exact.1@example.com');
    expect(kept.raw.equals(FIXTURE), kept.raw.toString('utf8')).toBe(true);
    expect(kept).toMatchObject({
      mailFrom: 'bounce+abc123@bounces.example.com',
      rcptTo: ['delivered@simulator.herald.test', 'someone@anywhere.example'],
      sizeBytes: FIXTURE.length,
      subject: 'Äpfel <kept> byte for byte',
    });
    expect(kept.id).toMatch(/^[a-f0-9]{24}$/);
    expect(Number.isNaN(Date.parse(kept.receivedAt))).toBe(false);
  });

  it.each(['PLAIN', 'LOGIN'] as const)('accepts AUTH %s with any credentials (a relay URL with user:pass works)', async (method) => {
    const info = await send(sink.smtpPort, mail('whoever@example.org'), { user: 'anyone', pass: 'anything', method });
    expect(info.accepted).toEqual(['whoever@example.org']);
  });

  it('refuses bounce@ at RCPT with 550 5.1.1 and still delivers to the other recipients of the transaction', async () => {
    const message = mail([`bounce@${SIM}`, `delivered@${SIM}`, 'other@example.net']);
    const info = await send(sink.smtpPort, message);
    expect(info.rejected).toEqual([`bounce@${SIM}`]);
    expect(info.rejectedErrors?.[0]?.responseCode).toBe(550);
    expect(info.rejectedErrors?.[0]?.response).toMatch(/^550 5\.1\.1 /);
    const kept = await sink.waitFor((m) => m.subject === message.subject);
    expect(kept.rcptTo).toEqual([`delivered@${SIM}`, 'other@example.net']);
    expect(sink.replies().filter((r) => r.address === `bounce@${SIM}`)).toMatchObject([{ stage: 'rcpt', code: 550 }]);
  });

  it('answers softbounce@ with 451 4.2.0 twice for the same sender and recipient, then accepts', async () => {
    const message = mail(`softbounce@${SIM}`);
    for (let attempt = 1; attempt <= 2; attempt++) {
      const failure = await sendFailure(sink.smtpPort, message);
      expect(failure.code, `attempt ${attempt}`).toBe('EENVELOPE');
      expect(failure.responseCode).toBe(451);
      expect(failure.response).toMatch(/^451 4\.2\.0 /);
    }
    const info = await send(sink.smtpPort, message);
    expect(info.accepted).toEqual([`softbounce@${SIM}`]);
    const codes = sink
      .replies()
      .filter((r) => r.address === `softbounce@${SIM}` && r.stage === 'rcpt')
      .map((r) => r.code);
    expect(codes.slice(-3)).toEqual([451, 451, 250]);
    // Another sender (another email, with Herald's VERP sender) has its own count.
    const fresh = await sendFailure(sink.smtpPort, mail(`softbounce@${SIM}`));
    expect(fresh.responseCode).toBe(451);
  });

  it('refuses suppressed@ with 550 5.1.1 "address on suppression list"', async () => {
    const failure = await sendFailure(sink.smtpPort, mail(`suppressed@${SIM}`));
    expect(failure.code).toBe('EENVELOPE');
    expect(failure.responseCode).toBe(550);
    expect(failure.response).toBe('550 5.1.1 address on suppression list');
  });

  it('matches simulator addresses case-insensitively, ignores a +tag, and accepts unknown ones like delivered@', async () => {
    expect((await sendFailure(sink.smtpPort, mail(`BOUNCE@Simulator.Herald.TEST`))).responseCode).toBe(550);
    expect((await sendFailure(sink.smtpPort, mail(`bounce+case7@${SIM}`))).responseCode).toBe(550);
    expect((await send(sink.smtpPort, mail(`anything-else@${SIM}`))).accepted).toEqual([`anything-else@${SIM}`]);
  });

  it('accepts complaint@ and then sends an ARF report to the feedback SMTP, addressed to the envelope sender', async () => {
    const verp = 'bounce+0123456789abcdef01234567@bounces.example.com';
    const info = await send(sink.smtpPort, {
      envelope: { from: verp, to: [`complaint@${SIM}`] },
      from: 'news@brand.example',
      to: `complaint@${SIM}`,
      subject: 'complain about me',
      text: 'buy now',
      messageId: '<complained.1@brand.example>',
    });
    expect(info.accepted).toEqual([`complaint@${SIM}`]);
    const report = await waitFor(
      'the ARF report',
      async () => Promise.resolve(feedback.received.find((r) => r.rcptTo.includes(verp))),
      10_000,
    );
    expect(report.rcptTo).toEqual([verp]);

    const parsed = await simpleParser(report.raw, { keepDeliveryStatus: true });
    const contentType = parsed.headers.get('content-type') as { value: string; params: Record<string, string> };
    expect(contentType.value).toBe('multipart/report');
    expect(contentType.params['report-type']).toBe('feedback-report');
    expect(parsed.text).toContain('complained.1@brand.example');
    const fields = parsed.attachments.find((a) => a.contentType === 'message/feedback-report')?.content.toString('utf8') ?? '';
    expect(fields).toMatch(/^Feedback-Type: abuse$/m);
    expect(fields).toMatch(/^Version: 1$/m);
    expect(fields).toMatch(/^User-Agent: \S+/m);
    expect(fields).toContain(`Original-Mail-From: <${verp}>`);
    expect(fields).toContain(`Original-Rcpt-To: <complaint@${SIM}>`);
    expect(fields).toMatch(/^Arrival-Date: \w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} \+0000$/m);
    expect(fields).toMatch(/^Reported-Domain: brand\.example$/m);
    const headers = parsed.attachments.find((a) => a.contentType === 'text/rfc822-headers')?.content.toString('utf8') ?? '';
    expect(headers).toMatch(/^Message-ID: <complained\.1@brand\.example>$/im);
    expect(headers).toMatch(/^Subject: complain about me$/m);
  });
});

describe('mail sink limits and failures', () => {
  const sinks: MailSink[] = [];
  afterEach(async () => {
    await Promise.all(sinks.splice(0).map((s) => s.close()));
  });

  it(`keeps a message of exactly ${SINK_MAX_MESSAGE_BYTES} bytes and refuses one byte more with 552`, async () => {
    const sink = await startMailSink({ smtpPort: 0 });
    sinks.push(sink);
    const head = Buffer.from('From: a@example.com\r\nTo: b@example.com\r\nSubject: big\r\n\r\n');
    const body = (size: number) => {
      const lines = Buffer.alloc(size - head.length, 'x');
      for (let i = 998; i < lines.length - 2; i += 1000) lines.write('\r\n', i);
      lines.write('\r\n', lines.length - 2);
      return Buffer.concat([head, lines]);
    };
    const exact = body(SINK_MAX_MESSAGE_BYTES);
    await send(sink.smtpPort, { envelope: { from: 'a@example.com', to: ['b@example.com'] }, raw: exact });
    expect(sink.messages()[0]?.sizeBytes).toBe(SINK_MAX_MESSAGE_BYTES);
    const failure = await sendFailure(sink.smtpPort, {
      envelope: { from: 'a@example.com', to: ['b@example.com'] },
      raw: body(SINK_MAX_MESSAGE_BYTES + 1),
    });
    expect(failure.responseCode).toBe(552);
    expect(sink.replies().at(-1)).toMatchObject({ stage: 'data', code: 552 });
    expect(sink.messages()).toHaveLength(1);
  }, 120_000);

  it('logs a warning and keeps running when the ARF report cannot be delivered', async () => {
    const lines: string[] = [];
    const deadPort = await freePort();
    const sink = await startMailSink({
      smtpPort: 0,
      feedback: { host: '127.0.0.1', port: deadPort },
      logger: createLogger('debug', {}, (line) => lines.push(line)),
    });
    sinks.push(sink);
    await send(sink.smtpPort, mail(`complaint@${SIM}`));
    await waitFor('the warning', () => Promise.resolve(lines.find((l) => l.includes('could not send the ARF'))), 15_000);
    const after = await send(sink.smtpPort, mail(`delivered@${SIM}`));
    expect(after.accepted).toEqual([`delivered@${SIM}`]);
  }, 30_000);

  it('rejects waitFor when no message matches in time', async () => {
    const sink = await startMailSink({ smtpPort: 0 });
    sinks.push(sink);
    await expect(sink.waitFor(() => true, 50)).rejects.toThrow(/no matching message within 50 ms/);
  });
});

describe('mail sink persistence', () => {
  const dir = mkdtempSync(join(tmpdir(), 'herald-sink-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes <id>.eml with the exact bytes plus an index, reloads them at the next start, and clear() removes them', async () => {
    const first = await startMailSink({ smtpPort: 0, dir });
    await send(first.smtpPort, { envelope: { from: 'a@example.com', to: [`delivered@${SIM}`] }, raw: FIXTURE });
    const [kept] = first.messages();
    expect(readFileSync(join(dir, `${kept!.id}.eml`)).equals(FIXTURE)).toBe(true);
    expect(readFileSync(join(dir, 'index.jsonl'), 'utf8')).toContain(kept!.id);
    await first.close();

    const second = await startMailSink({ smtpPort: 0, dir });
    try {
      expect(second.messages()).toHaveLength(1);
      const reloaded = second.messages()[0]!;
      expect({ ...reloaded, raw: undefined }).toEqual({ ...kept, raw: undefined });
      expect(reloaded.raw.equals(FIXTURE)).toBe(true);
      second.clear();
      expect(second.messages()).toEqual([]);
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      await second.close();
    }
    expect(existsSync(dir)).toBe(true);
  });
});

describe('mail sink viewer (HTTP)', () => {
  let sink: MailSink;
  let base: string;
  beforeAll(async () => {
    sink = await startMailSink({ smtpPort: 0, httpPort: 0 });
    base = `http://127.0.0.1:${sink.httpPort}`;
  });
  afterAll(async () => {
    await sink.close();
  });

  it('lists messages as escaped HTML and JSON, serves the raw bytes, and clears on DELETE', async () => {
    await send(sink.smtpPort, mail(`delivered@${SIM}`, { subject: '<script>alert("x")</script> & more' }));
    await send(sink.smtpPort, { envelope: { from: 'a@example.com', to: [`delivered@${SIM}`] }, raw: FIXTURE });

    const page = await fetch(`${base}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more');
    expect(html).not.toContain('<script>');
    expect(html).toContain('Äpfel &lt;kept&gt; byte for byte');

    const list = await fetch(`${base}/messages`);
    expect(list.status).toBe(200);
    const json = (await list.json()) as Array<Record<string, unknown>>;
    expect(json).toHaveLength(2);
    expect(json[1]).toMatchObject({
      mailFrom: 'a@example.com',
      rcptTo: [`delivered@${SIM}`],
      messageId: 'byte-exact.1@example.com',
      sizeBytes: FIXTURE.length,
    });
    expect(json[1]).not.toHaveProperty('raw');

    const raw = await fetch(`${base}${json[1]!.rawUrl as string}`);
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toBe('message/rfc822');
    expect(Buffer.from(await raw.arrayBuffer()).equals(FIXTURE)).toBe(true);
    expect(html).toContain(`href="/messages/${json[1]!.id as string}.eml"`);

    expect((await fetch(`${base}/messages/ffffffffffffffffffffffff.eml`)).status).toBe(404);
    expect((await fetch(`${base}/nope`)).status).toBe(404);

    const cleared = await fetch(`${base}/messages`, { method: 'DELETE' });
    expect(cleared.status).toBe(204);
    expect(await (await fetch(`${base}/messages`)).json()).toEqual([]);
    expect(sink.messages()).toEqual([]);
  });
});
