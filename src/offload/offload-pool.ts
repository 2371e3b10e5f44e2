import type { ResourceLimits } from 'node:worker_threads';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { Envelope } from '../modules/outbound/message-composer.ts';
import { AppError } from '../errors.ts';
import type { OffloadResult, OffloadTask } from './offload-tasks.ts';
import { transferableOf } from './offload-tasks.ts';
import { createWorkerChannel } from './worker-channel.ts';

const WORKER_URL = new URL('./offload-worker.ts', import.meta.url);

export interface ParsedBody {
  value: unknown;
  /** The idempotency fingerprint of method, path and body (see `requestFingerprint`). */
  fingerprint: string;
}

/** CPU-heavy work run on another thread (one per api or worker process, tasks started in order). */
export interface OffloadPool {
  /** `parseJsonBody` plus the request's idempotency fingerprint; rejects with the same AppErrors. */
  parseJson(bytes: Buffer, method: string, path: string): Promise<ParsedBody>;
  /** `decodeBase64`: the bytes, or null when the text is not base64. */
  decodeBase64(text: string): Promise<Buffer | null>;
  /** `composeMessage`: the message as it goes on the wire, DKIM-signed when it says so. */
  composeMessage(message: Mail.Options, envelope: Envelope): Promise<Buffer>;
  close(): Promise<void>;
}

/** One worker thread, started on first use and again after a crash (the tasks in flight then reject). */
export function createOffloadPool(options: { resourceLimits?: ResourceLimits } = {}): OffloadPool {
  const channel = createWorkerChannel<OffloadTask, OffloadResult>({
    url: WORKER_URL,
    name: 'offload worker',
    resourceLimits: options.resourceLimits,
  });
  const run = (task: OffloadTask, transfer: ArrayBuffer[]) => channel.request(task, transfer);

  function unwrap<K extends OffloadResult['kind']>(result: OffloadResult, kind: K): Extract<OffloadResult, { kind: K }> {
    if (result.kind === 'appError') throw new AppError(result.code, result.message, result.details);
    if (result.kind !== kind) throw new Error(`offload answered ${result.kind} to a ${kind} task`);
    return result as Extract<OffloadResult, { kind: K }>;
  }

  return {
    async parseJson(bytes, method, path) {
      const result = unwrap(await run({ kind: 'parseJson', bytes, method, path }, transferableOf(bytes)), 'parsedJson');
      return { value: result.value, fingerprint: result.fingerprint };
    },
    async decodeBase64(text) {
      const { bytes } = unwrap(await run({ kind: 'decodeBase64', text }, []), 'decodedBase64');
      return bytes === null ? null : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    },
    async composeMessage(message, envelope) {
      const { bytes } = unwrap(await run({ kind: 'composeMessage', message, envelope }, []), 'composedMessage');
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    },
    close: () => channel.terminate(),
  };
}
