import { type ResourceLimits, Worker } from 'node:worker_threads';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { Logger } from '../../logger.ts';
import type { RelayTlsSettings } from '../../smtp/tls-policy.ts';
import { composableElsewhere, composeMessage, type Envelope } from './message-composer.ts';
import type { Relay, RelayResult } from './relay.ts';

const THREAD_URL = new URL('./relay-thread.worker.ts', import.meta.url);

/** What the relay thread is started with: the pooled relay's settings (SMTP_RELAY_URL and its TLS). */
export interface RelayThreadSettings {
  url: string;
  poolSize: number;
  tls: RelayTlsSettings;
}

/** A message for the thread: one it composes and signs itself, or bytes composed here. */
export type RelayThreadTask = { kind: 'compose'; message: Mail.Options; envelope: Envelope } | { kind: 'raw'; raw: Uint8Array; envelope: Envelope };

type Pending = { thread: Worker; resolve: (result: RelayResult) => void };

/** A log line of the thread, written by the worker's logger. */
interface ThreadLog {
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
  fields: Record<string, unknown>;
}

/**
 * The pooled relay (SMTP_RELAY_URL) on a thread of its own: the thread composes and DKIM-signs
 * each message and holds the SMTP connections, so each transaction's round trips (MAIL, RCPT,
 * DATA, the body, the answer) wait on an event loop that does little else, not on the worker's,
 * which drives the queue, the group commits and Temporal (BENCHMARKS.md: the relay connections'
 * round trips, not the CPU, bounded a broadcast). A message with attachments (streams from blob
 * storage) or a large body is composed here and handed over as bytes.
 *
 * The thread starts on the first message and again after a crash; a message in flight when it
 * crashed gets an `unreachable` answer (a temporary failure, retried like a dropped connection;
 * the relay may have taken it already: the same window as a connection lost after DATA).
 */
export function createThreadedRelay(options: { settings: RelayThreadSettings; resourceLimits?: ResourceLimits; logger: Logger }): Relay {
  let thread: Worker | null = null;
  let nextId = 0;
  const pending = new Map<number, Pending>();

  /** The thread failed or exited: its messages get a temporary failure; the next message starts a new thread. */
  function lost(gone: Worker, reason: string): void {
    for (const [id, entry] of pending) {
      if (entry.thread !== gone) continue;
      pending.delete(id);
      entry.resolve({ kind: 'unreachable', response: `relay thread stopped: ${reason}` });
    }
    if (thread === gone) thread = null;
  }

  function started(): Worker {
    if (thread) return thread;
    const created = new Worker(THREAD_URL, { workerData: options.settings, ...(options.resourceLimits ? { resourceLimits: options.resourceLimits } : {}) });
    created.unref();
    created.on('message', (message: { id: number; result: RelayResult } | { log: ThreadLog }) => {
      if ('log' in message) {
        options.logger[message.log.level](message.log.message, { ...message.log.fields, thread: 'relay' });
        return;
      }
      const entry = pending.get(message.id);
      pending.delete(message.id);
      entry?.resolve(message.result);
    });
    created.on('error', (error: Error) => {
      options.logger.error('relay thread failed', { error });
      lost(created, error.message);
    });
    created.on('exit', (code) => lost(created, `exit code ${code}`));
    thread = created;
    return created;
  }

  function run(task: RelayThreadTask): Promise<RelayResult> {
    return new Promise((resolve) => {
      nextId += 1;
      const target = started();
      pending.set(nextId, { thread: target, resolve });
      target.postMessage({ id: nextId, task });
    });
  }

  return {
    async send(message, envelope) {
      if (composableElsewhere(message)) return run({ kind: 'compose', message, envelope });
      let raw: Buffer;
      try {
        raw = await composeMessage(message, envelope);
      } catch (error) {
        // As the relay answers a message nodemailer cannot build (e.g. an attachment's stream failed): temporary.
        const { code, message: text } = error as { code?: string; message?: string };
        return { kind: 'unreachable', response: `${code ?? 'ERROR'}: ${text ?? String(error)}` };
      }
      return run({ kind: 'raw', raw, envelope });
    },
    close() {
      const current = thread;
      thread = null;
      current?.postMessage({ close: true });
    },
  };
}
