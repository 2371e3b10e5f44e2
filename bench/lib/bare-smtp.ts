/**
 * Baseline of the inbound benchmark: a bare smtp-server that accepts every recipient and only
 * writes each message to a file (streamed, fsynced, like Herald's blob store), then answers 250.
 *
 *   node bench/lib/bare-smtp.ts <directory> <port>
 *
 * Prints `bare smtp listening` once it accepts connections.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { SMTPServer } from 'smtp-server';

const [dir, port] = process.argv.slice(2);
if (!dir || !port) throw new Error('usage: node bench/lib/bare-smtp.ts <directory> <port>');
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['AUTH'],
  hideSTARTTLS: true,
  disableReverseLookup: true,
  size: 25 * 1024 * 1024,
  maxClients: 200,
  onData(stream, _session, callback) {
    const path = join(dir, `${randomBytes(12).toString('hex')}.eml`);
    pipeline(stream, createWriteStream(path))
      .then(async () => {
        const handle = await open(path, 'r');
        await handle.sync();
        await handle.close();
        callback(null, 'stored');
      })
      .catch((error: unknown) => callback(error as Error));
  },
});
server.on('error', () => {});
server.listen(Number(port), '127.0.0.1', () => process.stdout.write('bare smtp listening\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
