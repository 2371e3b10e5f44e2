import { type ResourceLimits, Worker } from 'node:worker_threads';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { Envelope } from '../modules/sends/message-composer.ts';
import { AppError } from '../errors.ts';
import type { OffloadResult, OffloadTask } from './offload-tasks.ts';
import { transferableOf } from './offload-tasks.ts';

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

type Pending = { worker: Worker; resolve: (result: OffloadResult) => void; reject: (error: Error) => void };

/**
 * One worker thread, started on first use and again after a crash (the tasks in flight then
 * reject). It does not keep the process alive.
 */
export function createOffloadPool(options: { resourceLimits?: ResourceLimits } = {}): OffloadPool {
  let worker: Worker | null = null;
  let nextId = 0;
  const pending = new Map<number, Pending>();

  /** A thread that failed or exited: its tasks reject; the next task starts a new one. */
  function fail(gone: Worker, error: Error): void {
    for (const [id, entry] of pending) {
      if (entry.worker !== gone) continue;
      pending.delete(id);
      entry.reject(error);
    }
    if (worker === gone) worker = null;
  }

  function started(): Worker {
    if (worker) return worker;
    const created = new Worker(WORKER_URL, options.resourceLimits ? { resourceLimits: options.resourceLimits } : {});
    created.unref();
    created.on('message', ({ id, result, crash }: { id: number; result?: OffloadResult; crash?: string }) => {
      const entry = pending.get(id);
      pending.delete(id);
      if (crash !== undefined || !result) entry?.reject(new Error(`offload task failed: ${crash ?? 'no result'}`));
      else entry?.resolve(result);
    });
    created.on('error', (error: Error) => fail(created, error));
    created.on('exit', (code) => fail(created, new Error(`offload worker exited with ${code}`)));
    worker = created;
    return created;
  }

  function run(task: OffloadTask, transfer: ArrayBuffer[]): Promise<OffloadResult> {
    return new Promise((resolve, reject) => {
      nextId += 1;
      const target = started();
      pending.set(nextId, { worker: target, resolve, reject });
      target.postMessage({ id: nextId, task }, transfer);
    });
  }

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
    async close() {
      const current = worker;
      worker = null;
      if (current) await current.terminate();
    },
  };
}
