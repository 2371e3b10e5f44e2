import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { simpleParser } from 'mailparser';
import { SMTPServer, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { parseInput } from '../validation.ts';
import { requestFingerprint } from '../canonical-json.ts';
import type { Logger } from '../logger.ts';
import type { DatabaseOutage } from '../db/outage.ts';
import type { Authenticator } from '../modules/auth/authenticator.ts';
import type { KeyContext } from '../modules/auth/key-context.ts';
import type { IdempotencyStore } from '../modules/idempotency/idempotency.store.ts';
import type { TokenBucket } from '../modules/rate-limit/token-bucket.ts';
import { SEND_LIMITS, SendEmailBody, sendBodyErrorReason } from '../modules/sends/sends.schemas.ts';
import type { SendsService } from '../modules/sends/sends.service.ts';
import type { SubmissionGuard } from './submission-guard.ts';
import { replyForRefusal, sendRequestOf, smtpReply } from './submission.fns.ts';

/** The scope a key needs to submit mail (the spec: "send transactional emails via API or SMTP"). */
export const SUBMISSION_SCOPE = 'outbox.transactional:send';
/** RCPT TO per message: to, cc and bcc of the API, 50 each. */
const MAX_RECIPIENTS = SEND_LIMITS.recipientsPerField * 3;
/** The raw message: a 25 MB message in base64 with headers. */
const MAX_MESSAGE_BYTES = Math.ceil((SEND_LIMITS.messageBytesMax * 4) / 3) + 1024 * 1024;

export interface SubmissionDeps {
  config: Pick<Config, 'env' | 'smtp'>;
  logger: Logger;
  authenticator: Authenticator;
  sends: SendsService;
  idempotency: IdempotencyStore;
  /** The API key's token bucket (Redis); without it messages are not rate limited. */
  bucket: TokenBucket | null;
  /** Failed-AUTH lockout and the per-address connection cap (src/smtp/submission-guard.ts). */
  guard: SubmissionGuard;
  /** PostgreSQL outages (src/db/outage.ts): failures they cause answer 4xx and are logged once per outage. */
  outage?: DatabaseOutage;
}

const LOCKED_OUT = () => smtpReply(421, '4.7.0 Too many failed authentications from here; try again later');

/** The API key a session authenticated with (smtp-server keeps what onAuth returned as `user`). */
const callerOf = (session: SMTPServerSession): KeyContext | undefined => session.user as KeyContext | undefined;

/**
 * The SMTP submission front door (RFC 6409): mail clients and apps submit with AUTH PLAIN or
 * LOGIN, any user name and an API key holding `outbox.transactional:send` as the password,
 * after STARTTLS (SMTP_TLS_KEY_FILE / SMTP_TLS_CERT_FILE; without them AUTH over plain text is
 * allowed outside production only), or over implicit TLS (`implicitTls`, RFC 8314's port 465). Each message becomes a transactional email through the
 * same acceptance as POST /outbox/emails (domain, suppression, credits, warm-up cap, limits,
 * the key's rate limit), answered 250 with the email id once it is committed, or with the
 * refusal as an SMTP reply. A message that carries a Message-ID is idempotent on it for 24 h:
 * a client that resubmits after a lost reply gets the same email, not a second one.
 * Failed AUTH is counted per client address and per user name: past the limit (5 per name, 10
 * per address in 15 minutes by default) the client gets 421 4.7.0 and the connection closes,
 * until the window ends; one address holds 10 connections at most (421 past that).
 */
export function createSubmissionServer(deps: SubmissionDeps, options: { implicitTls?: boolean } = {}): SMTPServer {
  const { config, logger } = deps;
  const tlsFiles =
    config.smtp.tlsKeyFile && config.smtp.tlsCertFile
      ? { key: readFileSync(config.smtp.tlsKeyFile), cert: readFileSync(config.smtp.tlsCertFile) }
      : null;
  if (options.implicitTls && !tlsFiles) throw new Error('smtp submission: implicit TLS needs SMTP_TLS_KEY_FILE and SMTP_TLS_CERT_FILE');
  if (!tlsFiles && config.env === 'production')
    logger.warn(
      'smtp submission: no SMTP_TLS_KEY_FILE/SMTP_TLS_CERT_FILE, so AUTH is refused (keys never travel in plain text in production)',
    );
  // Implicit TLS (RFC 8314): the whole session is TLS from the first byte, so STARTTLS is not offered.
  const tls: Partial<SMTPServerOptions> = tlsFiles
    ? options.implicitTls
      ? { ...tlsFiles, secure: true }
      : tlsFiles
    : { hideSTARTTLS: true };

  /** Frees a Message-ID claim whose send failed; during a PostgreSQL outage, once it ends (a claim left running answers the retries 451 until its lock times out). */
  async function releaseClaim(recordId: string): Promise<void> {
    const abandon = () => deps.idempotency.abandon(recordId);
    await abandon().catch((error: unknown) => {
      if (!deps.outage?.report(error)) throw error;
      deps.outage.whenBack(abandon);
    });
  }

  async function accept(session: SMTPServerSession, raw: Buffer): Promise<string> {
    const caller = callerOf(session);
    if (!caller) throw smtpReply(530, '5.7.0 Authentication required');
    if (deps.bucket) {
      const decision = await deps.bucket.take(caller.keyId ?? caller.orgId, caller.rateLimit).catch(() => null);
      if (decision && !decision.allowed)
        throw smtpReply(451, `4.7.1 Rate limit exceeded; retry in ${Math.ceil(decision.retryAfterMs / 1000)} s`);
    }
    const parsed = await simpleParser(raw, { skipTextToHtml: true, skipImageLinks: true });
    const request = sendRequestOf(parsed, {
      mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : null,
      rcptTo: session.envelope.rcptTo.map((r) => r.address),
    });
    const input = await parseInput(SendEmailBody, request, 'body', sendBodyErrorReason);
    if (!parsed.messageId) return (await deps.sends.sendEmail(caller.orgId, caller, input)).email.id;

    // Same Message-ID, same content: the send the message asks for, not its bytes, so a client
    // that rebuilds the message to resubmit it (a new Date header, new MIME boundaries) is
    // recognised; other content under the same Message-ID is refused.
    const scope = {
      orgId: caller.orgId,
      apiKeyId: caller.keyId ?? '',
      key: `\nsmtp:${createHash('sha256').update(parsed.messageId).digest('hex')}`,
      fingerprint: requestFingerprint('SMTP', 'submission', request),
    };
    const begun = await deps.idempotency.begin(scope);
    if (begun.kind === 'replay') return (begun.body as { email_id: string }).email_id;
    if (begun.kind === 'mismatch')
      throw smtpReply(550, '5.7.1 This Message-ID was already submitted with different content; give the message a new Message-ID');
    if (begun.kind === 'in_progress') throw smtpReply(451, '4.3.0 A message with this Message-ID is being submitted; try again shortly');
    let stored = false;
    try {
      const accepted = await deps.sends.sendEmail(caller.orgId, caller, input, {
        answer: {
          cte: (email) => deps.idempotency.answerCte(begun.recordId, 202, { email_id: email.email.id }),
          stored: () => (stored = true),
        },
      });
      if (!stored) await deps.idempotency.complete(begun.recordId, 202, { email_id: accepted.email.id });
      return accepted.email.id;
    } catch (error) {
      if (!stored) await releaseClaim(begun.recordId);
      throw error;
    }
  }

  return new SMTPServer({
    ...tls,
    banner: 'Herald submission',
    authMethods: ['PLAIN', 'LOGIN'],
    allowInsecureAuth: !tlsFiles && config.env !== 'production',
    size: MAX_MESSAGE_BYTES,
    disableReverseLookup: true,
    socketTimeout: 60_000,
    // A locked-out address is turned away at once, and past its connection cap (421 closes).
    onConnect(session: SMTPServerSession, callback) {
      if (!deps.guard.admit(session.id, session.remoteAddress))
        return callback(smtpReply(421, '4.7.0 Too many connections from your address; try again later'));
      deps.guard.isLocked(session.remoteAddress).then(
        (locked) => callback(locked ? LOCKED_OUT() : undefined),
        () => callback(),
      );
    },
    onClose(session: SMTPServerSession) {
      deps.guard.release(session.id);
    },
    onAuth(auth, session: SMTPServerSession, callback) {
      const user = auth.username ?? '';
      const refuse = async (reply: Error & { responseCode: number }) =>
        callback((await deps.guard.recordFailure(session.remoteAddress, user)) ? LOCKED_OUT() : reply);
      (async () => {
        // A locked address or user name is not even tried: the right key waits too.
        if (await deps.guard.isLocked(session.remoteAddress, user)) return callback(LOCKED_OUT());
        const context = await deps.authenticator.authenticate(auth.password ?? '');
        if (!context) return refuse(smtpReply(535, '5.7.8 Authentication failed: the password must be a valid Herald API key'));
        if (!context.scopes.includes(SUBMISSION_SCOPE))
          return refuse(smtpReply(535, `5.7.8 Authentication failed: the key lacks the ${SUBMISSION_SCOPE} scope`));
        callback(null, { user: context });
      })().catch((error: unknown) => {
        if (!deps.outage?.report(error)) logger.error('smtp submission: authentication failed', { error });
        callback(smtpReply(454, '4.7.0 Temporary authentication failure'));
      });
    },
    onMailFrom(_address, session: SMTPServerSession, callback) {
      callback(callerOf(session) ? undefined : smtpReply(530, '5.7.0 Authentication required'));
    },
    onRcptTo(_address, session: SMTPServerSession, callback) {
      if (session.envelope.rcptTo.length >= MAX_RECIPIENTS)
        return callback(smtpReply(452, `4.5.3 Too many recipients (at most ${MAX_RECIPIENTS} per message)`));
      callback();
    },
    onData(stream, session: SMTPServerSession, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        if (stream.sizeExceeded)
          return callback(smtpReply(552, `5.3.4 Message exceeds the ${Math.round(MAX_MESSAGE_BYTES / 1024 / 1024)} MB size limit`));
        accept(session, Buffer.concat(chunks)).then(
          (emailId) => callback(null, `2.0.0 Ok: queued as ${emailId}`),
          (error: unknown) => {
            if (error instanceof Error && 'responseCode' in error) return callback(error);
            if (error instanceof AppError) return callback(replyForRefusal(error));
            if (!deps.outage?.report(error)) logger.error('smtp submission: message not accepted', { error });
            callback(smtpReply(451, '4.3.0 Temporary failure, try again later'));
          },
        );
      });
    },
  });
}
