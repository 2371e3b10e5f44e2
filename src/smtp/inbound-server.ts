import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { MikroORM } from '@mikro-orm/postgresql';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { Domain } from '../../db/entities/index.ts';
import { ALL_TENANTS } from '../../db/orm.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';

/** The largest message accepted: the spec's 25 MB body-plus-attachments ceiling. */
export const MAX_MESSAGE_BYTES = 25 * 1024 * 1024;

interface SmtpReplyError extends Error {
  responseCode: number;
}

function reply(code: number, message: string): SmtpReplyError {
  return Object.assign(new Error(message), { responseCode: code });
}

export interface InboundServerDeps {
  config: Pick<Config, 'smtp' | 'bounceDomain'>;
  orm: MikroORM;
  logger: Logger;
}

/**
 * Inbound MX. Recipients are checked at RCPT: a domain of some workspace or the VERP bounce
 * domain, else 550 5.1.1. The size limit is announced and enforced after draining (552).
 * Storing and ingesting the message belongs to the inbound pipeline; until it is wired in,
 * DATA is answered 451 (transient) so senders keep the message and retry: nothing is lost.
 */
export function createInboundServer({ config, orm, logger }: InboundServerDeps): SMTPServer {
  const tls: Partial<SMTPServerOptions> =
    config.smtp.tlsKeyFile && config.smtp.tlsCertFile
      ? { key: readFileSync(config.smtp.tlsKeyFile), cert: readFileSync(config.smtp.tlsCertFile) }
      : { hideSTARTTLS: true };

  async function acceptsDomain(domain: string): Promise<boolean> {
    if (domain === config.bounceDomain.toLowerCase()) return true;
    const found = await orm.em.fork().count(Domain, { domain }, ALL_TENANTS);
    return found > 0;
  }

  return new SMTPServer({
    ...tls,
    name: config.smtp.host === '0.0.0.0' ? undefined : config.smtp.host,
    banner: 'Herald inbound',
    authOptional: true,
    disabledCommands: ['AUTH'],
    size: MAX_MESSAGE_BYTES,
    maxClients: 200,
    disableReverseLookup: true,
    socketTimeout: 60_000,
    onRcptTo(address, _session, callback) {
      const domain = address.address.split('@').pop()?.toLowerCase() ?? '';
      acceptsDomain(domain).then(
        (ok) => callback(ok ? undefined : reply(550, '5.1.1 Recipient address rejected: unknown domain')),
        (error: unknown) => {
          logger.error('recipient check failed', { error });
          callback(reply(451, '4.3.0 Temporary failure, try again later'));
        },
      );
    },
    onData(stream, _session, callback) {
      stream.on('data', () => {});
      stream.on('end', () => {
        if (stream.sizeExceeded) {
          callback(reply(552, '5.3.4 Message exceeds the 25 MB size limit'));
          return;
        }
        callback(reply(451, '4.3.2 Inbound processing is not enabled on this server yet, try again later'));
      });
    },
  });
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
