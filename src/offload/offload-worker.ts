/**
 * The offload thread of a process: runs CPU-heavy, pure work so the event loop keeps serving
 * meanwhile: in the api, parsing a large JSON body with its idempotency fingerprint and decoding
 * base64 attachments; in the worker, composing and DKIM-signing outgoing messages. Messages are
 * `{ id, request }` in (worker-channel.ts), `{ id, result }` or `{ id, crash }` out.
 */
import { parentPort } from 'node:worker_threads';
import { runOffloadTask, transferableOf, type OffloadTask } from './offload-tasks.ts';

const port = parentPort;
if (!port) throw new Error('offload-worker.ts runs as a worker thread');

port.on('message', ({ id, request }: { id: number; request: OffloadTask }) => {
  runOffloadTask(request).then(
    (result) =>
      port.postMessage(
        { id, result },
        result.kind === 'decodedBase64' || result.kind === 'composedMessage' ? transferableOf(result.bytes) : [],
      ),
    (error: unknown) => port.postMessage({ id, crash: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
  );
});
