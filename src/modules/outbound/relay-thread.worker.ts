/**
 * The relay thread (relay-thread.ts): one pooled SMTP relay, composing and DKIM-signing the
 * messages it is given. Messages are `{ id, request }` in (src/offload/worker-channel.ts), `{ id, result }` (a RelayResult) and
 * `{ log }` (a line for the worker's logger) out; `{ close: true }` closes the connections and
 * ends the thread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { Logger } from '../../logger.ts';
import { composeMessage } from './message-composer.ts';
import { createRelay, type RelayResult } from './relay.ts';
import type { RelayThreadSettings, RelayThreadTask } from './relay-thread.ts';

const port = parentPort;
if (!port) throw new Error('relay-thread.worker.ts runs as a worker thread');
const settings = workerData as RelayThreadSettings;
/** Log lines go to the worker's logger (its sink, level and redaction), posted as `{ log }`. */
const forward =
  (level: 'debug' | 'info' | 'warn' | 'error') =>
  (message: string, fields?: Record<string, unknown>): void =>
    port.postMessage({ log: { level, message, fields: fields ?? {} } });
const logger: Logger = {
  debug: forward('debug'),
  info: forward('info'),
  warn: forward('warn'),
  error: forward('error'),
  child: () => logger,
};
const relay = createRelay({
  url: settings.url,
  poolSize: settings.poolSize,
  ...(settings.maxConnections ? { maxConnections: settings.maxConnections } : {}),
  tls: settings.tls,
  logger,
  localAddress: settings.localAddress,
});

async function send(task: RelayThreadTask): Promise<RelayResult> {
  if (task.kind === 'raw')
    return relay.send({ raw: Buffer.from(task.raw.buffer, task.raw.byteOffset, task.raw.byteLength) }, task.envelope);
  let raw: Buffer;
  try {
    raw = await composeMessage(task.message, task.envelope);
  } catch (error) {
    logger.warn('message not composed ahead; the relay composes it', { error });
    return relay.send(task.message, task.envelope);
  }
  return relay.send({ raw }, task.envelope);
}

port.on('message', (incoming: { id: number; request: RelayThreadTask } | { close: true }) => {
  if ('close' in incoming) {
    relay.close();
    port.close();
    return;
  }
  send(incoming.request).then(
    (result) => port.postMessage({ id: incoming.id, result }),
    (error: unknown) =>
      port.postMessage({
        id: incoming.id,
        result: {
          kind: 'unreachable',
          response: `relay thread: ${error instanceof Error ? error.message : String(error)}`,
        } satisfies RelayResult,
      }),
  );
});
