/**
 * The offload thread of the api process: runs CPU-heavy, pure request work (parsing a large
 * JSON body with its idempotency fingerprint, decoding base64 attachments) so the event loop
 * keeps serving other requests meanwhile. Messages are `{ id, task }` in, `{ id, result }` or
 * `{ id, crash }` out.
 */
import { parentPort } from 'node:worker_threads';
import { runOffloadTask, transferableOf, type OffloadTask } from './offload-tasks.ts';

const port = parentPort;
if (!port) throw new Error('offload-worker.ts runs as a worker thread');

port.on('message', ({ id, task }: { id: number; task: OffloadTask }) => {
  try {
    const result = runOffloadTask(task);
    port.postMessage({ id, result }, result.kind === 'decodedBase64' ? transferableOf(result.bytes) : []);
  } catch (error) {
    port.postMessage({ id, crash: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  }
});
