import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { SMTPServer, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import { Domain } from '../../db/entities/index.ts';
import { ALL_TENANTS } from '../../db/orm.ts';
import type { BlobStore } from '../blob/blob-store.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { startInboundWorkflow } from '../modules/inbound/inbound-starter.ts';
import { createInboundIntake, type InboundEnvelope } from '../modules/inbound/intake.ts';

/** The largest message accepted: the spec's 25 MB body-plus-attachments ceiling. */
export const MAX_MESSAGE_BYTES = 25 * 1024 * 1024;
/** Recipients per message; more are refused with 452 4.5.3 (RFC 5321 §4.5.3.1.8 asks for at least 100). */
export const MAX_RECIPIENTS = 100;
/** Simultaneous SMTP connections per process; more are refused with 421. */
export const MAX_CLIENTS = 200;
/** A workflow start gives up on an unresponsive Temporal after this long (the reconciler takes over). */
const START_DEADLINE_MS = 5_000;

interface SmtpReplyError extends Error {
  responseCode: number;
}

function reply(code: number, message: string): SmtpReplyError {
  return Object.assign(new Error(message), { responseCode: code });
}

export interface InboundServerDeps {
  config: Pick<Config, 'smtp' | 'bounceDomain' | 'temporal'>;
  orm: MikroORM;
  logger: Logger;
  /** Where raw messages go; null (BLOB_DIR empty) answers every DATA with 451. */
  blobs: BlobStore | null;
  /** Starts ingestion after the 250; null leaves it to the worker's reconciler. */
  temporal: Client | null;
  limits?: Partial<InboundLimits>;
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
 * Inbound MX. RCPT: a domain of some workspace or the VERP bounce domain, else 550 5.1.1; past
 * `maxRecipients` 452 4.5.3. DATA: the message is streamed into the blob store and its
 * InboundMessage row recorded (src/modules/inbound/intake.ts), and only then answered 250 with
 * the id; over the size limit 552 5.3.4 after draining; any failure to store or record 451 4.3.0
 * with nothing kept. After the 250 the `inbound:<id>` workflow is started; if Temporal does not
 * take it, the row stays `received` and the worker's reconciler starts it later.
 */
export function createInboundServer({ config, orm, logger, blobs, temporal, limits = {} }: InboundServerDeps) {
  const { maxBytes, maxRecipients, maxClients }: InboundLimits = {
    maxBytes: MAX_MESSAGE_BYTES,
    maxRecipients: MAX_RECIPIENTS,
    maxClients: MAX_CLIENTS,
    ...limits,
  };
  const intake = createInboundIntake({ orm, blobs, maxBytes, logger });
  const starts = new Set<Promise<void>>();
  const tls: Partial<SMTPServerOptions> =
    config.smtp.tlsKeyFile && config.smtp.tlsCertFile
      ? { key: readFileSync(config.smtp.tlsKeyFile), cert: readFileSync(config.smtp.tlsCertFile) }
      : { hideSTARTTLS: true };

  /** Workspaces the accepted recipients of one envelope belong to; null marks a VERP recipient (routed later). */
  const envelopeOrgs = new WeakMap<object, Set<string | null>>();

  /** Whether a recipient domain is accepted, and the workspace owning it (null: the bounce domain). */
  async function lookupDomain(domain: string): Promise<{ accepted: boolean; orgId: string | null }> {
    if (domain === config.bounceDomain.toLowerCase()) return { accepted: true, orgId: null };
    const found = await orm.em.fork().findOne(Domain, { domain }, { ...ALL_TENANTS, fields: ['orgId'] });
    return { accepted: found !== null, orgId: found?.orgId ?? null };
  }

  /** The workspace for HeraldOrgId when every recipient is on domains of one workspace. */
  function knownOrg(session: SMTPServerSession): string | undefined {
    const orgs = envelopeOrgs.get(session.envelope);
    if (!orgs || orgs.size !== 1) return undefined;
    return [...orgs][0] ?? undefined;
  }

  function startIngestion(inboundId: string, orgId: string | undefined): void {
    if (!temporal) return;
    const started = temporal.connection
      .withDeadline(Date.now() + START_DEADLINE_MS, () => startInboundWorkflow(temporal, config, { inboundId, ...(orgId ? { orgId } : {}) }))
      .catch((error: unknown) =>
        logger.warn('inbound: could not start ingestion; the reconciler will', { inboundId, error: error instanceof Error ? error.message : String(error) }),
      )
      .finally(() => starts.delete(started));
    starts.add(started);
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
      const domain = address.address.split('@').pop()?.toLowerCase() ?? '';
      lookupDomain(domain).then(
        ({ accepted, orgId }) => {
          if (!accepted) {
            callback(reply(550, '5.1.1 Recipient address rejected: unknown domain'));
            return;
          }
          const orgs = envelopeOrgs.get(session.envelope) ?? new Set();
          envelopeOrgs.set(session.envelope, orgs.add(orgId));
          callback();
        },
        (error: unknown) => {
          logger.error('recipient check failed', { error });
          callback(reply(451, '4.3.0 Temporary failure, try again later'));
        },
      );
    },
    onData(stream, session, callback) {
      const orgId = knownOrg(session);
      intake.receive(stream, envelopeOf(session)).then(
        (result) => {
          if (result.status === 'too_large') {
            callback(reply(552, `5.3.4 Message exceeds the ${Math.round(maxBytes / 1024 / 1024)} MB size limit`));
          } else if (result.status === 'failed') {
            callback(reply(451, '4.3.0 Temporary failure storing the message, try again later'));
          } else {
            callback(null, `2.0.0 Ok: queued as ${result.id}`);
            startIngestion(result.id, orgId);
          }
        },
        (error: unknown) => {
          logger.error('inbound: intake failed', { error });
          callback(reply(451, '4.3.0 Temporary failure storing the message, try again later'));
        },
      );
    },
  });
  return {
    server,
    /** Resolves when every workflow start begun so far has finished (or given up). */
    async settle(): Promise<void> {
      await Promise.all([...starts]);
    },
  };
}

export interface RunningSmtp {
  port: number;
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
