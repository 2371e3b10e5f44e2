import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/**
 * An SMTP server on 127.0.0.1 standing in for the relay or a remote MX: it accepts every
 * message and records, in arrival order, its Message-ID and the address the connection came
 * from (what an egress pool binds).
 */
export async function startSourceRecordingSink() {
  const received: { messageId: string; source: string }[] = [];
  const server = new SMTPServer({
    authOptional: true,
    hideSTARTTLS: true,
    disableReverseLookup: true,
    closeTimeout: 500,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const messageId = /^message-id:\s*<([^>]+)>/im.exec(Buffer.concat(chunks).toString('latin1'))?.[1] ?? '';
        received.push({ messageId, source: session.remoteAddress.replace(/^::ffff:/, '') });
        callback(null, 'queued');
      });
    },
  });
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.server.address() as AddressInfo).port,
    received,
    /** The source address the message with this Message-ID came from (waits for it). */
    async sourceOf(messageId: string, timeoutMs = 20_000): Promise<string> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = received.find((entry) => entry.messageId === messageId);
        if (found) return found.source;
        if (Date.now() > deadline) throw new Error(`message ${messageId} never arrived: ${JSON.stringify(received)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
