import nodemailer, { type Transporter } from 'nodemailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool/index.js';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { Logger } from '../../logger.ts';
import type { RelayTlsSettings } from '../../smtp/tls-policy.ts';
import { composableElsewhere, type Envelope } from './message-composer.ts';
import { buildTransportTls, createTlsFailureLog, describeTlsFailure, type TlsFailureLog, type TransportError } from './relay-tls.ts';
import { createAdaptiveGate } from './shaping/adaptive-limit.ts';
import { withAdaptiveConnections } from './shaping/adaptive-relay.ts';

/** One recipient's answer from the relay. */
export interface RelayRecipientResult {
  email: string;
  accepted: boolean;
  code: number | null;
  response: string | null;
  /**
   * Set when Herald's own per-destination shaping held the recipient back (no server was asked):
   * try again after this many ms. Such a deferral is no delivery attempt and fires no event.
   */
  heldMs?: number;
}

/**
 * What one SMTP transaction with the relay came to: per-recipient answers; or the message
 * refused as a whole (at MAIL FROM or DATA: `permanent` for 5xx); or no answer at all
 * (connection refused, timeout, TLS failure), which is treated as temporary.
 */
export type RelayResult =
  | { kind: 'recipients'; recipients: RelayRecipientResult[]; response: string | null }
  | { kind: 'message_refused'; permanent: boolean; code: number | null; response: string }
  | { kind: 'unreachable'; response: string };

export interface Relay {
  send(message: Mail.Options, envelope: { from: string; to: string[] }): Promise<RelayResult>;
  close(): void;
}

interface SmtpError extends TransportError {
  responseCode?: number;
  recipient?: string;
  rejectedErrors?: SmtpError[];
}

function rejectedResults(errors: readonly SmtpError[]): RelayRecipientResult[] {
  return errors.map((error) => ({
    email: (error.recipient ?? '').toLowerCase(),
    accepted: false,
    code: error.responseCode ?? null,
    response: error.response ?? error.message,
  }));
}

/** SMTP_RELAY_URL fit for a log line: the password replaced with `***`. */
export function maskRelayUrl(relayUrl: string): string {
  const url = new URL(relayUrl);
  if (url.password) url.password = '***';
  return url.toString().replace(/\/$/, '');
}

/**
 * One SMTP transaction on a nodemailer transport, as a RelayResult: never throws for an SMTP
 * answer. A TLS failure is an unreachable server (temporary) whose response says why, and
 * `tlsFailures` logs one warning per reason while it lasts.
 */
export async function sendOnTransport(
  transport: Transporter,
  message: Mail.Options,
  envelope: { from: string; to: string[] },
  context: { tls: RelayTlsSettings; tlsFailures: TlsFailureLog },
): Promise<RelayResult> {
  const { tls, tlsFailures } = context;
  try {
    const info = (await transport.sendMail({ ...message, envelope })) as {
      accepted?: (string | Mail.Address)[];
      rejectedErrors?: SmtpError[];
      response?: string;
    };
    tlsFailures.recordSuccess();
    const accepted = new Set((info.accepted ?? []).map((a) => String(typeof a === 'string' ? a : a.address).toLowerCase()));
    const rejected = rejectedResults(info.rejectedErrors ?? []);
    const rejectedSet = new Set(rejected.map((r) => r.email));
    const recipients: RelayRecipientResult[] = envelope.to.map((email) => {
      const lower = email.toLowerCase();
      const refusal = rejected.find((r) => r.email === lower);
      if (refusal) return refusal;
      return { email: lower, accepted: accepted.has(lower) || !rejectedSet.has(lower), code: 250, response: info.response ?? null };
    });
    return { kind: 'recipients', recipients, response: info.response ?? null };
  } catch (caught) {
    const error = caught as SmtpError;
    const tlsFailure = describeTlsFailure(error, tls);
    if (tlsFailure) {
      tlsFailures.recordFailure(tlsFailure);
      return { kind: 'unreachable', response: tlsFailure.reason };
    }
    if (error.code === 'EENVELOPE' && error.command === 'RCPT TO' && error.rejectedErrors?.length) {
      return { kind: 'recipients', recipients: rejectedResults(error.rejectedErrors), response: error.response ?? null };
    }
    if (typeof error.responseCode === 'number') {
      return {
        kind: 'message_refused',
        permanent: error.responseCode >= 500,
        code: error.responseCode,
        response: error.response ?? error.message,
      };
    }
    return { kind: 'unreachable', response: `${error.code ?? 'ERROR'}: ${error.message}` };
  }
}

/**
 * `relay` with its messages composed and DKIM-signed by `compose` (the worker's offload thread,
 * message-composer.ts) and handed to it as bytes: the RSA signature and the MIME composition,
 * most of a message's CPU, leave the event loop that drives the queue and the connections. A
 * message with attachments (streams from blob storage) is composed by the relay itself, and so
 * is one the thread failed to compose (the relay then answers as it would have).
 */
export function composedElsewhere(
  relay: Relay,
  compose: (message: Mail.Options, envelope: Envelope) => Promise<Buffer>,
  logger: Logger,
): Relay {
  return {
    async send(message, envelope) {
      if (!composableElsewhere(message)) return relay.send(message, envelope);
      let raw: Buffer;
      try {
        raw = await compose(message, envelope);
      } catch (error) {
        logger.warn('message not composed on the offload thread; composed in the event loop instead', { error });
        return relay.send(message, envelope);
      }
      return relay.send({ raw }, envelope);
    },
    close: () => relay.close(),
  };
}

/**
 * The outbound relay (SMTP_RELAY_URL) through nodemailer's pooled SMTP transport: one pool per
 * worker process, connections reused across messages, TLS as `tls` says (config.relayTls).
 * Never throws for an SMTP answer; the caller decides what each answer means. A TLS failure is
 * an unreachable relay (temporary) whose response says why, and the log gets one warning per
 * reason while it lasts.
 */
export function createRelay(options: {
  url: string;
  poolSize: number;
  /** SMTP_RELAY_MAX_CONNECTIONS: the pool grows from `poolSize` up to this while the relay accepts (shaping/adaptive-limit.ts). */
  maxConnections?: number;
  tls: RelayTlsSettings;
  logger: Logger;
  /** The source address every connection binds to (an egress pool's); the OS chooses when absent. */
  localAddress?: string | undefined;
}): Relay {
  const url = new URL(options.url);
  const maxConnections = Math.max(options.poolSize, options.maxConnections ?? options.poolSize);
  const { tls } = options;
  const port = Number(url.port || (url.protocol === 'smtps:' ? 465 : 25));
  const tlsFailures = createTlsFailureLog(options.logger, { address: `${url.hostname}:${port}`, settings: tls });
  const transport = nodemailer.createTransport({
    pool: true,
    host: url.hostname,
    port,
    ...buildTransportTls(tls, url.protocol === 'smtps:'),
    ...(url.username ? { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } } : {}),
    ...(options.localAddress ? { localAddress: options.localAddress } : {}),
    maxConnections,
    maxMessages: 1000,
    connectionTimeout: 15_000,
    greetingTimeout: 15_000,
    socketTimeout: 120_000,
    disableFileAccess: true,
    disableUrlAccess: true,
  } satisfies SMTPPool.Options);

  const relay: Relay = {
    send: (message, envelope) => sendOnTransport(transport, message, envelope, { tls, tlsFailures }),
    close() {
      transport.close();
    },
  };
  if (maxConnections === options.poolSize) return relay;
  return withAdaptiveConnections(relay, createAdaptiveGate({ initial: options.poolSize, max: maxConnections }));
}
