import nodemailer from 'nodemailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool/index.js';
import type Mail from 'nodemailer/lib/mailer/index.js';

/** One recipient's answer from the relay. */
export interface RelayRecipientResult {
  email: string;
  accepted: boolean;
  code: number | null;
  response: string | null;
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

interface SmtpError extends Error {
  code?: string;
  command?: string;
  responseCode?: number;
  response?: string;
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

/**
 * The outbound relay (SMTP_RELAY_URL) through nodemailer's pooled SMTP transport: one pool per
 * worker process, connections reused across messages. Never throws for an SMTP answer; the
 * caller decides what each answer means.
 */
export function createRelay(options: { url: string; poolSize: number }): Relay {
  const url = new URL(options.url);
  const transport = nodemailer.createTransport({
    pool: true,
    host: url.hostname,
    port: Number(url.port || (url.protocol === 'smtps:' ? 465 : 25)),
    secure: url.protocol === 'smtps:',
    ...(url.username ? { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } } : {}),
    maxConnections: options.poolSize,
    maxMessages: 1000,
    connectionTimeout: 15_000,
    greetingTimeout: 15_000,
    socketTimeout: 120_000,
    disableFileAccess: true,
    disableUrlAccess: true,
  } satisfies SMTPPool.Options);

  return {
    async send(message, envelope) {
      try {
        const info = await transport.sendMail({ ...message, envelope });
        const accepted = new Set(((info.accepted ?? []) as (string | Mail.Address)[]).map((a) => String(typeof a === 'string' ? a : a.address).toLowerCase()));
        const rejected = rejectedResults((info as { rejectedErrors?: SmtpError[] }).rejectedErrors ?? []);
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
    },
    close() {
      transport.close();
    },
  };
}
