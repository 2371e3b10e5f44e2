import type { ResourceLimits } from 'node:worker_threads';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { Logger } from '../../logger.ts';
import { createWorkerChannel } from '../../offload/worker-channel.ts';
import type { RelayTlsSettings } from '../../smtp/tls-policy.ts';
import { composableElsewhere, composeMessage, type Envelope } from './message-composer.ts';
import type { Relay, RelayResult } from './relay.ts';

const THREAD_URL = new URL('./relay-thread.worker.ts', import.meta.url);

/** What the relay thread is started with: the pooled relay's settings (SMTP_RELAY_URL and its TLS). */
export interface RelayThreadSettings {
  url: string;
  poolSize: number;
  /** SMTP_RELAY_MAX_CONNECTIONS: how far the pool may grow while the relay accepts (absent: a fixed pool). */
  maxConnections?: number;
  tls: RelayTlsSettings;
  /** The source address of the thread's connections (an egress pool's); the OS chooses when absent. */
  localAddress?: string;
}

/** A message for the thread: one it composes and signs itself, or bytes composed here. */
export type RelayThreadTask =
  { kind: 'compose'; message: Mail.Options; envelope: Envelope } | { kind: 'raw'; raw: Uint8Array; envelope: Envelope };

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
  const channel = createWorkerChannel<RelayThreadTask, RelayResult>({
    url: THREAD_URL,
    name: 'relay thread',
    workerData: options.settings,
    resourceLimits: options.resourceLimits,
    onMessage: (message) => {
      const { log } = message as { log: ThreadLog };
      options.logger[log.level](log.message, { ...log.fields, thread: 'relay' });
    },
    onError: (error) => options.logger.error('relay thread failed', { error }),
  });

  /** The relay's answer; a thread that died with the message in flight is an unreachable relay (temporary). */
  const run = (task: RelayThreadTask): Promise<RelayResult> =>
    channel.request(task).catch((error: Error) => ({ kind: 'unreachable', response: `relay thread stopped: ${error.message}` }));

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
      channel.post({ close: true });
    },
  };
}
