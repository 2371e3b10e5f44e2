import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import type SMTPPool from 'nodemailer/lib/smtp-pool/index.js';
import type { Logger } from '../../logger.ts';
import type { RelayTlsSettings } from '../../smtp/tls-policy.ts';

type TransportTlsOptions = Pick<SMTPPool.Options, 'secure' | 'requireTLS' | 'ignoreTLS' | 'opportunisticTLS' | 'tls'>;

/** What nodemailer reports when a connection fails; `originalCode` keeps Node's TLS error code. */
export interface TransportError extends Error {
  code?: string;
  originalCode?: string;
  command?: string;
  response?: string;
}

/** A TLS failure with the relay: `key` groups repeats for the log, `reason` is the recipient's last_response. */
export interface TlsFailure {
  key: string;
  reason: string;
}

/** Node's codes for a certificate that did not verify (chain, expiry, host name). */
const CERTIFICATE_ERROR = /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ALTNAME|HOSTNAME/;

/**
 * Reads SMTP_RELAY_CA_FILE: the trusted authorities become the public roots plus the file's
 * certificates, so a private CA passes `verify` without distrusting the public ones.
 */
export function readTrustedAuthorities(caFile: string, setting = 'SMTP_RELAY_CA_FILE'): string[] {
  let pem: string;
  try {
    pem = readFileSync(caFile, 'utf8');
  } catch (error) {
    throw new Error(`${setting}: cannot read ${caFile}: ${(error as Error).message}`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new Error(`${setting}: ${caFile} holds no PEM certificate`);
  return [...rootCertificates, pem];
}

/** nodemailer's TLS options for a policy; `implicitTls` for smtps:// (TLS from the first byte). */
export function buildTransportTls(settings: RelayTlsSettings, implicitTls: boolean): TransportTlsOptions {
  switch (settings.policy) {
    case 'none':
      return { secure: false, ignoreTLS: true };
    case 'opportunistic':
      // A STARTTLS the server refuses leaves the session in plaintext; any certificate is accepted.
      return { secure: implicitTls, opportunisticTLS: !implicitTls, tls: { rejectUnauthorized: false } };
    case 'verify': {
      const ca = settings.caFile ? { ca: readTrustedAuthorities(settings.caFile) } : {};
      return { secure: implicitTls, requireTLS: !implicitTls, tls: { rejectUnauthorized: true, minVersion: 'TLSv1.2', ...ca } };
    }
  }
}

/**
 * Whether a failed connection was TLS's doing, and in words a recipient's last_response can
 * carry: a certificate that did not verify, a relay that refused STARTTLS (or does not offer it),
 * or a handshake that broke. Other failures (refused connection, timeout) give null.
 */
export function describeTlsFailure(error: TransportError, settings: RelayTlsSettings): TlsFailure | null {
  const prefix = `TLS with the relay failed (policy ${settings.policy})`;
  const nodeCode = error.originalCode ?? '';
  if (CERTIFICATE_ERROR.test(nodeCode)) {
    return { key: nodeCode, reason: `${prefix}: its certificate was refused: ${plainMessage(error)} (${nodeCode})` };
  }
  if (error.code !== 'ETLS') return null;
  if (error.command === 'STARTTLS' && error.response) {
    return { key: 'starttls-refused', reason: `${prefix}: the relay refused STARTTLS: ${error.response}` };
  }
  return { key: `handshake:${nodeCode || error.message}`, reason: `${prefix}: ${error.message}` };
}

/** Node's words without its advice to run Node differently (`; if the root CA is installed locally, ...`). */
function plainMessage(error: TransportError): string {
  return (error.message.split(';')[0] ?? error.message).trim();
}

/**
 * One warning per relay and reason while the failure lasts, not one per message; after a
 * message goes through again the next failure warns anew.
 */
export function createTlsFailureLog(logger: Logger, relay: { address: string; settings: RelayTlsSettings }) {
  const warned = new Set<string>();
  return {
    recordFailure(failure: TlsFailure): void {
      if (warned.has(failure.key)) return;
      warned.add(failure.key);
      logger.warn('relay TLS failed: messages stay deferred until it works', {
        relay: relay.address,
        tlsPolicy: relay.settings.policy,
        reason: failure.reason,
        hint: hintFor(relay.settings),
      });
    },
    recordSuccess(): void {
      if (warned.size === 0) return;
      warned.clear();
      logger.info('relay TLS works again', { relay: relay.address, tlsPolicy: relay.settings.policy });
    },
  };
}

export type TlsFailureLog = ReturnType<typeof createTlsFailureLog>;

function hintFor(settings: RelayTlsSettings): string {
  if (settings.policy !== 'verify') return "check the relay's TLS setup";
  return 'give the relay a certificate for its host name, trust its CA with SMTP_RELAY_CA_FILE, or set SMTP_RELAY_TLS=opportunistic for a relay you reach over a trusted network';
}
