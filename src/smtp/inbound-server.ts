import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { SMTPServer, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import type { BlobStore } from '../blob/blob-store.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { DatabaseOutage } from '../db/outage.ts';
import { inboundIntakeActorContract } from '../../workflows/inbound-intake.ts';
import { createActorWaker } from '../temporal/actor-wake.ts';
import { createInboundIntake, type InboundEnvelope } from '../modules/inbound/intake.ts';
import { routeOf } from '../modules/inbound/routing.ts';
import { isReceivingDomain } from '../modules/inbound/routing.repo.ts';
import { createVerpSigner } from '../modules/outbound/verp.ts';
import { inboundRefusedRecipients } from '../metrics/metrics.ts';

/** The largest message accepted: the spec's 25 MB body-plus-attachments ceiling. */
export const MAX_MESSAGE_BYTES = 25 * 1024 * 1024;
/** Recipients per message; more are refused with 452 4.5.3 (RFC 5321 §4.5.3.1.8 asks for at least 100). */
export const MAX_RECIPIENTS = 100;
/** Simultaneous SMTP connections per process; more are refused with 421. */
export const MAX_CLIENTS = 200;
/** A wake-up gives up on an unresponsive Temporal after this long (the reconciler takes over). */
const WAKE_DEADLINE_MS = 5_000;
/** How long the RCPT check reuses a domain it found proven (a refusal is never reused). */
export const PROVEN_DOMAIN_TTL_MS = 1_000;
/** Proven domains remembered at most (then all forgotten and found again). */
const PROVEN_DOMAINS_KEPT = 1_000;

/**
 * The RCPT check's lookup with the domains it found proven remembered for `ttlMs`: a burst to
 * one domain asks PostgreSQL once per `ttlMs` instead of once per session. Only a yes is kept,
 * so a domain proven a moment ago receives at once; a domain removed or back to pending is
 * still accepted for at most `ttlMs`, as a message accepted just before the removal is, and
 * ingestion marks such a message failed (no workspace owns it).
 */
export function rememberProvenDomains(
  lookup: (domain: string) => Promise<boolean>,
  ttlMs = PROVEN_DOMAIN_TTL_MS,
  now: () => number = Date.now,
): (domain: string) => Promise<boolean> {
  const provenUntil = new Map<string, number>();
  return async (domain) => {
    const until = provenUntil.get(domain);
    if (until !== undefined && until > now()) return true;
    const proven = await lookup(domain);
    if (!proven) provenUntil.delete(domain);
    else {
      if (provenUntil.size >= PROVEN_DOMAINS_KEPT) provenUntil.clear();
      provenUntil.set(domain, now() + ttlMs);
    }
    return proven;
  };
}

interface SmtpReplyError extends Error {
  responseCode: number;
}

function reply(code: number, message: string): SmtpReplyError {
  return Object.assign(new Error(message), { responseCode: code });
}

export interface InboundServerDeps {
  config: Pick<Config, 'smtp' | 'bounceDomain' | 'temporal' | 'queues' | 'encryptionKeys'>;
  orm: MikroORM;
  logger: Logger;
  /** Where raw messages go; null (BLOB_DIR empty) answers every DATA with 451. */
  blobs: BlobStore | null;
  /** Wakes the inbound actor after the 250; null leaves it to the worker's reconciler. */
  temporal: Client | null;
  limits?: Partial<InboundLimits>;
  /** PostgreSQL outages (src/db/outage.ts): failures they cause answer 451 and are logged once per outage. */
  outage?: DatabaseOutage;
}

export interface InboundLimits {
  maxBytes: number;
  maxRecipients: number;
  maxClients: number;
}

function envelopeOf(session: SMTPServerSession): InboundEnvelope {
  return {
    mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
    rcptTo: session.envelope.rcptTo.map((recipient) => recipient.address),
    remoteAddress: session.remoteAddress || null,
    clientHostname: session.clientHostname || null,
    heloName: session.hostNameAppearsAs || null,
    tls: session.secure,
  };
}

/**
 * Inbound MX. RCPT: an address on a domain some workspace has verified, or a return path Herald
 * signed (src/modules/outbound/verp.ts), else 550 5.1.1 (a pending domain receives nothing; an
 * unsigned or forged bounce address is refused and counted); past `maxRecipients` 452 4.5.3. DATA: the message is streamed into the blob store and its
 * InboundMessage row recorded (src/modules/inbound/intake.ts), and only then answered 250 with
 * the id; over the size limit 552 5.3.4 after draining; any failure to store or record 451 4.3.0
 * with nothing kept. The row's commit NOTIFYs the inbound actor's drain; when that drain was not
 * running, the 250 is followed by a wake-up of the actor (signal-with-start, at most one per
 * second per process, not awaited). If Temporal does not take it, the row stays `received` and
 * due, and the worker's inbound reconciler wakes the actor.
 */
export function createInboundServer({ config, orm, logger, blobs, temporal, limits = {}, outage }: InboundServerDeps) {
  const { maxBytes, maxRecipients, maxClients }: InboundLimits = {
    maxBytes: MAX_MESSAGE_BYTES,
    maxRecipients: MAX_RECIPIENTS,
    maxClients: MAX_CLIENTS,
    ...limits,
  };
  const intake = createInboundIntake({ orm, blobs, maxBytes, logger, ...(outage ? { outage } : {}) });
  const wakes = new Set<Promise<void>>();
  const tls: Partial<SMTPServerOptions> =
    config.smtp.tlsKeyFile && config.smtp.tlsCertFile
      ? { key: readFileSync(config.smtp.tlsKeyFile), cert: readFileSync(config.smtp.tlsCertFile) }
      : { hideSTARTTLS: true };

  const verp = config.encryptionKeys.length > 0 ? createVerpSigner(config.encryptionKeys) : null;
  const isProven = rememberProvenDomains((domain) => isReceivingDomain(orm.em.fork(), domain));

  /** Whether a recipient is accepted, or why not. */
  async function checkRecipient(address: string): Promise<'accepted' | 'unknown_domain' | 'forged_return_path'> {
    const route = routeOf(address, config.bounceDomain, verp);
    if (route.kind === 'refused') return 'forged_return_path';
    if (route.kind === 'verp') return 'accepted';
    return (await isProven(route.domain)) ? 'accepted' : 'unknown_domain';
  }

  const wakeIntake = temporal
    ? createActorWaker({ client: temporal, config, logger, actor: inboundIntakeActorContract, deadlineMs: WAKE_DEADLINE_MS })
    : null;
  function wakeIngestion(inboundId: string): void {
    const woken = wakeIntake?.({}, { inboundId });
    if (!woken) return;
    const tracked = woken.finally(() => wakes.delete(tracked));
    wakes.add(tracked);
  }

  const server = new SMTPServer({
    ...tls,
    name: config.smtp.host === '0.0.0.0' ? undefined : config.smtp.host,
    banner: 'Herald inbound',
    authOptional: true,
    disabledCommands: ['AUTH'],
    size: maxBytes,
    maxClients,
    disableReverseLookup: true,
    socketTimeout: 60_000,
    onRcptTo(address, session, callback) {
      if (session.envelope.rcptTo.length >= maxRecipients) {
        callback(reply(452, `4.5.3 Too many recipients (at most ${maxRecipients} per message)`));
        return;
      }
      checkRecipient(address.address).then(
        (verdict) => {
          if (verdict === 'accepted') {
            callback();
            return;
          }
          inboundRefusedRecipients.inc({ reason: verdict });
          if (verdict === 'forged_return_path') {
            logger.info('inbound: refused a bounce address Herald did not sign', {
              rcpt: address.address.slice(0, 320),
              remoteAddress: session.remoteAddress,
            });
            callback(reply(550, '5.1.1 Recipient address rejected: unknown bounce address'));
            return;
          }
          callback(reply(550, '5.1.1 Recipient address rejected: unknown domain'));
        },
        (error: unknown) => {
          if (!outage?.report(error)) logger.error('recipient check failed', { error });
          callback(reply(451, '4.3.0 Temporary failure, try again later'));
        },
      );
    },
    onData(stream, session, callback) {
      intake.receive(stream, envelopeOf(session)).then(
        (result) => {
          if (result.status === 'too_large') {
            callback(reply(552, `5.3.4 Message exceeds the ${Math.round(maxBytes / 1024 / 1024)} MB size limit`));
          } else if (result.status === 'failed') {
            callback(reply(451, '4.3.0 Temporary failure storing the message, try again later'));
          } else {
            callback(null, `2.0.0 Ok: queued as ${result.id}`);
            if (!result.draining) wakeIngestion(result.id);
          }
        },
        (error: unknown) => {
          if (!outage?.report(error)) logger.error('inbound: intake failed', { error });
          callback(reply(451, '4.3.0 Temporary failure storing the message, try again later'));
        },
      );
    },
  });
  return {
    server,
    /** Resolves when every wake-up begun so far has finished (or given up). */
    async settle(): Promise<void> {
      await Promise.all([...wakes]);
    },
  };
}

export interface RunningSmtp {
  port: number;
  /** The submission front door's port; null when it is off. */
  submissionPort: number | null;
  /** The submission port with implicit TLS (SMTP_SUBMISSIONS_PORT), when it listens. */
  submissionsPort: number | null;
  close(): Promise<void>;
}

export async function listenSmtp(server: SMTPServer, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.server.address() as AddressInfo).port;
}
