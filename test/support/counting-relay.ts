import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/**
 * A relay standing in for the provider on 127.0.0.1: it answers each message after `delayMs`
 * and counts what it accepted per Message-ID (with when it first arrived).
 */
export async function startCountingRelay(options: { delayMs?: number } = {}) {
  const accepted = new Map<string, number>();
  const firstAt = new Map<string, number>();
  const server = new SMTPServer({
    authOptional: true,
    hideSTARTTLS: true,
    disableReverseLookup: true,
    closeTimeout: 500,
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const id = /^message-id:\s*<([^>]+)>/im.exec(Buffer.concat(chunks).toString('latin1'))?.[1] ?? '';
        setTimeout(() => {
          accepted.set(id, (accepted.get(id) ?? 0) + 1);
          if (!firstAt.has(id)) firstAt.set(id, Date.now());
          callback(null, 'queued');
        }, options.delayMs ?? 0);
      });
    },
  });
  // The killed worker's connections end with ECONNRESET: expected here.
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.server.address() as AddressInfo).port,
    accepted,
    firstAt,
    total: () => [...accepted.values()].reduce((a, b) => a + b, 0),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
