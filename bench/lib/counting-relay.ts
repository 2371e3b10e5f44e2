import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** What the counting relay keeps of a message: the envelope, its Message-ID and arrival time, never the bytes. */
export interface RelayArrival {
  mailFrom: string;
  rcptTo: string[];
  messageId: string | null;
  receivedAt: number;
}

/**
 * The relay of a benchmark with a large volume (bench/broadcast.ts): smtp-server on loopback
 * that reads each message through, keeps only its envelope, Message-ID and arrival time, and
 * answers 250. The dev mail sink keeps every message whole, which at 100,000 messages makes the
 * benchmark's own process the bottleneck (its heap and collector grow with what it holds).
 */
export async function startCountingRelay() {
  let arrivals: RelayArrival[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH'],
    hideSTARTTLS: true,
    disableReverseLookup: true,
    size: 30 * 1024 * 1024,
    maxClients: 200,
    onData(stream, session, callback) {
      let head = '';
      stream.on('data', (chunk: Buffer) => {
        if (head.length < 16_384) head += chunk.toString('latin1');
      });
      stream.on('end', () => {
        arrivals.push({
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
          messageId: /^message-id:\s*<([^>]+)>/im.exec(head)?.[1] ?? null,
          receivedAt: Date.now(),
        });
        callback(null, 'queued');
      });
    },
  });
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.server.address() as AddressInfo).port,
    /** The arrivals so far (the live list: read, do not keep). */
    arrivals: () => arrivals,
    clear() {
      arrivals = [];
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
