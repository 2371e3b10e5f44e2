import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { newId } from '../../db/ids.ts';
import { createLogger, type Logger } from '../logger.ts';
import { headerBlock } from '../modules/sandbox/arf-report.ts';
import { sendArfReport } from './mail-sink-arf.ts';
import { startSinkViewer, type SinkViewer } from './mail-sink-http.ts';
import {
  rcptReply,
  REJECT_REPLY,
  SIMULATOR_DOMAIN,
  simulatedMailbox,
  softBounceKey,
  type SmtpReply,
} from '../modules/sandbox/mailbox-simulator.ts';
import { createSinkStore, type SinkMessage } from './mail-sink-store.ts';

export { SIMULATOR_DOMAIN };

/** The largest message the sink keeps (announced in EHLO, enforced with 552 after draining). */
export const SINK_MAX_MESSAGE_BYTES = 30 * 1024 * 1024;

/** How long after accepting a complaint@ message its ARF report goes out. */
const COMPLAINT_DELAY_MS = 100;

export type { SinkMessage };

export interface MailSinkOptions {
  host?: string;
  smtpPort: number;
  httpPort?: number | null;
  dir?: string | null;
  simulatorDomain?: string;
  softBounceAttempts?: number;
  feedback?: { host: string; port: number } | null;
  logger?: Logger;
}

export interface SinkReply {
  at: string;
  stage: 'rcpt' | 'data';
  address: string | null;
  code: number;
  message: string;
}

export interface MailSink {
  smtpPort: number;
  httpPort: number | null;
  messages(): SinkMessage[];
  waitFor(predicate: (m: SinkMessage) => boolean, timeoutMs?: number): Promise<SinkMessage>;
  /** Every SMTP reply the sink gave to RCPT/DATA, for asserting simulator behaviour. */
  replies(): SinkReply[];
  clear(): void;
  close(): Promise<void>;
}

function smtpError(reply: SmtpReply): Error {
  return Object.assign(new Error(reply.message), { responseCode: reply.code });
}

/**
 * Decoded Subject and Message-ID (without <>), read from the header block only. mailparser is
 * loaded with the first message: the supervisor that hosts the sink stays ~10 MB smaller until then.
 */
async function summarize(raw: Buffer): Promise<{ subject: string | null; messageId: string | null }> {
  const { simpleParser } = await import('mailparser');
  const parsed = await simpleParser(Buffer.concat([headerBlock(raw), Buffer.from('\r\n\r\n')]), {
    skipHtmlToText: true,
    skipTextToHtml: true,
    skipImageLinks: true,
  });
  const messageId = parsed.messageId?.trim().replace(/^<|>$/g, '') || null;
  return { subject: parsed.subject ?? null, messageId };
}

/**
 * The development mail sink: an SMTP server that stands for "the internet" (the final hop of
 * every outbound message), with a mailbox simulator at `simulatorDomain` and an optional HTTP
 * viewer. Accepts any sender and recipient (AUTH optional, any credentials; no STARTTLS) and
 * keeps every message byte for byte. See docs/mail-sink.md for the simulator's addresses.
 */
export async function startMailSink(options: MailSinkOptions): Promise<MailSink> {
  const host = options.host ?? '127.0.0.1';
  const simulatorDomain = options.simulatorDomain ?? SIMULATOR_DOMAIN;
  const softBounceAttempts = options.softBounceAttempts ?? 2;
  const feedback = options.feedback ?? null;
  const logger = options.logger ?? createLogger('silent');
  const store = createSinkStore(options.dir ?? null, logger);
  const replies: SinkReply[] = [];
  const softBounces = new Map<string, number>();
  const pending = new Set<Promise<void>>();
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;

  const record = (stage: SinkReply['stage'], address: string | null, reply: SmtpReply) =>
    replies.push({ at: new Date().toISOString(), stage, address, code: reply.code, message: reply.message });

  const scheduleComplaint = (original: SinkMessage, complainant: string) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      const sending = sendArfReport({ original, complainant, fromAddress: `feedback@${simulatorDomain}`, feedback, logger });
      pending.add(sending);
      void sending.finally(() => pending.delete(sending));
    }, COMPLAINT_DELAY_MS);
    timers.add(timer);
  };

  const server = new SMTPServer({
    name: host === '0.0.0.0' ? undefined : host,
    banner: 'Herald mail sink (development; nothing leaves this machine)',
    hideSTARTTLS: true,
    authOptional: true,
    allowInsecureAuth: true,
    authMethods: ['PLAIN', 'LOGIN'],
    size: SINK_MAX_MESSAGE_BYTES,
    disableReverseLookup: true,
    socketTimeout: 60_000,
    // Idle pooled client connections must not hold a dev shutdown for smtp-server's default 30 s.
    closeTimeout: 1000,
    onAuth(auth, _session, callback) {
      callback(null, { user: auth.username ?? 'anonymous' });
    },
    onRcptTo(address, session, callback) {
      const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
      const key = softBounceKey(mailFrom, address.address);
      const { reply, countsSoftBounce } = rcptReply(
        simulatedMailbox(address.address, simulatorDomain),
        softBounces.get(key) ?? 0,
        softBounceAttempts,
      );
      if (countsSoftBounce) softBounces.set(key, (softBounces.get(key) ?? 0) + 1);
      record('rcpt', address.address, reply);
      callback(reply.code >= 400 ? smtpError(reply) : undefined);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', (error) => callback(error));
      stream.on('end', () => {
        if (stream.sizeExceeded) {
          const reply = { code: 552, message: '5.3.4 Message exceeds the 30 MB size limit of the mail sink' };
          record('data', null, reply);
          callback(smtpError(reply));
          return;
        }
        if (session.envelope.rcptTo.some((r) => simulatedMailbox(r.address, simulatorDomain) === 'reject')) {
          record('data', null, REJECT_REPLY);
          callback(smtpError(REJECT_REPLY));
          return;
        }
        const raw = Buffer.concat(chunks);
        summarize(raw)
          .catch((error: unknown) => {
            logger.warn('mail sink: could not parse the message headers', { error });
            return { subject: null, messageId: null };
          })
          .then(({ subject, messageId }) => {
            const message: SinkMessage = {
              id: newId(),
              receivedAt: new Date().toISOString(),
              mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
              rcptTo: session.envelope.rcptTo.map((r) => r.address),
              sizeBytes: raw.length,
              subject,
              messageId,
              raw,
            };
            store.add(message);
            const reply = { code: 250, message: `OK: message queued as ${message.id}` };
            record('data', null, reply);
            logger.info('mail sink: message received', {
              id: message.id,
              from: message.mailFrom,
              to: message.rcptTo,
              subject: message.subject,
              sizeBytes: message.sizeBytes,
            });
            callback(null, reply.message);
            for (const rcpt of message.rcptTo) {
              if (simulatedMailbox(rcpt, simulatorDomain) === 'complaint') scheduleComplaint(message, rcpt);
            }
          })
          .catch((error: unknown) => {
            logger.error('mail sink: could not store a message', { error });
            const reply = { code: 451, message: '4.3.0 The mail sink could not store the message' };
            record('data', null, reply);
            callback(smtpError(reply));
          });
      });
    },
  });
  server.on('error', (error) => logger.warn('mail sink: smtp connection error', { error }));

  const smtpPort = await new Promise<number>((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.server.once('error', onError);
    server.listen(options.smtpPort, host, () => {
      server.server.off('error', onError);
      resolve((server.server.address() as AddressInfo).port);
    });
  });

  let viewer: SinkViewer | null = null;
  const closeSmtp = () => new Promise<void>((resolve) => server.close(() => resolve()));
  if (options.httpPort !== null && options.httpPort !== undefined) {
    try {
      viewer = await startSinkViewer({ host, port: options.httpPort, store, logger });
    } catch (error) {
      await closeSmtp();
      throw error;
    }
  }

  return {
    smtpPort,
    httpPort: viewer ? viewer.port : null,
    messages: () => store.all(),
    waitFor(predicate, timeoutMs = 10_000) {
      const found = store.all().find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          stop();
          reject(new Error(`mail sink: no matching message within ${timeoutMs} ms (${store.all().length} received)`));
        }, timeoutMs);
        const stop = store.onAdd((message) => {
          if (!predicate(message)) return;
          clearTimeout(timer);
          stop();
          resolve(message);
        });
      });
    },
    replies: () => [...replies],
    clear() {
      store.clear();
      replies.length = 0;
      softBounces.clear();
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await Promise.all([closeSmtp(), viewer?.close(), ...pending]);
    },
  };
}
