import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import type { TestCertificate } from './test-certificates.ts';

/** One message a TLS relay accepted, with whether its session was encrypted. */
export interface ReceivedOverTls {
  to: string[];
  secure: boolean;
  raw: string;
}

/**
 * A relay on 127.0.0.1 speaking real SMTP with TLS: STARTTLS offered with `certificate` (or,
 * `implicit`, TLS from the first byte like smtps://), or no STARTTLS at all when `certificate`
 * is null. It accepts every message and records whether the session was encrypted.
 */
export async function startTlsRelay(options: { certificate: TestCertificate | null; implicit?: boolean }) {
  const received: ReceivedOverTls[] = [];
  const tlsFailures: Error[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disableReverseLookup: true,
    closeTimeout: 500,
    secure: options.implicit ?? false,
    ...(options.certificate
      ? { key: options.certificate.key, cert: options.certificate.cert }
      : { hideSTARTTLS: true, disabledCommands: ['STARTTLS'] }),
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        received.push({
          to: session.envelope.rcptTo.map((r) => r.address),
          secure: session.secure,
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback(null, 'queued');
      });
    },
  });
  // A client that refuses the certificate aborts the handshake: recorded, not thrown.
  server.on('error', (error) => tlsFailures.push(error));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.server.address() as AddressInfo).port,
    received,
    tlsFailures,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
