import { type ResourceLimits, Worker } from 'node:worker_threads';

/**
 * Requests to one worker thread and their answers: the thread answers `{ id, result }`, or
 * `{ id, crash }` (a message) when the request failed there; anything else it posts goes to
 * `onMessage`. The thread starts on the first request and again after it failed or exited (the
 * requests in flight then reject); it does not keep the process alive.
 */
export interface WorkerChannel<Request, Result> {
  request(request: Request, transfer?: ArrayBuffer[]): Promise<Result>;
  /** Posts a message to the running thread, if there is one (e.g. "close your connections"). */
  post(message: unknown): void;
  /** Terminates the running thread, if there is one. */
  terminate(): Promise<void>;
}

type Pending<Result> = { thread: Worker; resolve: (result: Result) => void; reject: (error: Error) => void };

export function createWorkerChannel<Request, Result>(options: {
  url: URL;
  /** What the thread is named in errors (`offload worker exited with 1`). */
  name: string;
  workerData?: unknown;
  resourceLimits?: ResourceLimits | undefined;
  onMessage?: (message: unknown) => void;
  onError?: (error: Error) => void;
}): WorkerChannel<Request, Result> {
  let thread: Worker | null = null;
  let nextId = 0;
  const pending = new Map<number, Pending<Result>>();

  /** A thread that failed or exited: its requests reject; the next request starts a new one. */
  function lost(gone: Worker, error: Error): void {
    for (const [id, entry] of pending) {
      if (entry.thread !== gone) continue;
      pending.delete(id);
      entry.reject(error);
    }
    if (thread === gone) thread = null;
  }

  function started(): Worker {
    if (thread) return thread;
    const created = new Worker(options.url, {
      ...(options.workerData !== undefined ? { workerData: options.workerData } : {}),
      ...(options.resourceLimits ? { resourceLimits: options.resourceLimits } : {}),
    });
    created.unref();
    created.on('message', (message: { id?: number; result?: Result; crash?: string }) => {
      if (typeof message.id !== 'number') {
        options.onMessage?.(message);
        return;
      }
      const entry = pending.get(message.id);
      pending.delete(message.id);
      if (message.crash !== undefined || message.result === undefined)
        entry?.reject(new Error(`${options.name} task failed: ${message.crash ?? 'no result'}`));
      else entry?.resolve(message.result);
    });
    created.on('error', (error: Error) => {
      options.onError?.(error);
      lost(created, error);
    });
    created.on('exit', (code) => lost(created, new Error(`${options.name} exited with ${code}`)));
    thread = created;
    return created;
  }

  return {
    request(request, transfer = []) {
      return new Promise((resolve, reject) => {
        nextId += 1;
        const target = started();
        pending.set(nextId, { thread: target, resolve, reject });
        target.postMessage({ id: nextId, request }, transfer);
      });
    },
    post(message) {
      thread?.postMessage(message);
    },
    async terminate() {
      const current = thread;
      thread = null;
      if (current) await current.terminate();
    },
  };
}
