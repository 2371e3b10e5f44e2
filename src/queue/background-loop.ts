import type { Logger } from '../logger.ts';
import type { ListenChannel, QueueWakes } from './wakes.ts';

/**
 * The one shape of the worker's background loops (the webhook fan-out, the reconcilers, the
 * tracking counter). A loop has a name and a `pass()`; it runs a pass at start, then every
 * `intervalMs`, and at once when woken: a NOTIFY on its `wakeOn` channel (through the process's
 * one listener, `src/queue/wakes.ts`, which also wakes it when it reconnects) or a `poke()`.
 *
 * One pass at a time. An interval tick while a pass runs is dropped; a wake-up while a pass runs
 * asks for one more pass after it (rows committed during a pass are not left to the next tick).
 * A failing pass counts as 0 and is logged when the loop starts failing, then at most every
 * 30 s, and once when a pass succeeds again. While it fails, interval passes back off (the
 * interval doubled per failure, up to 30 s or the interval if longer); wake-ups still run.
 * `stop()` runs no further pass and waits for the one in flight, whose signal is aborted so a
 * pass that goes on in batches can return between two.
 */
export interface LoopSpec {
  name: string;
  intervalMs: number;
  /** A NOTIFY on this channel (any payload) runs a pass at once. */
  wakeOn?: ListenChannel;
  /** One pass; resolves with how many items it handled (0 when it found nothing). */
  pass(context: PassContext): Promise<number>;
}

export interface PassContext {
  /** Aborted when the loop stops. */
  signal: AbortSignal;
  /** Logs a failure that does not fail the pass (a wake-up that another pass repeats), throttled with the loop's own. */
  warn: (what: string, error: unknown) => void;
}

export interface BackgroundLoop {
  readonly name: string;
  /** Runs a pass that begins after this call (at once, or right after the pass in flight); resolves with its count. */
  poke(): Promise<number>;
  /** Runs no further pass; resolves once the pass in flight has returned. */
  stop(): Promise<void>;
}

export interface LoopDeps {
  logger: Logger;
  /** The process's listener; required by loops with a `wakeOn` channel. */
  wakes?: Pick<QueueWakes, 'subscribeChannel'>;
}

const FAILURE_LOG_EVERY_MS = 30_000;
const MAX_BACKOFF_MS = 30_000;

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Starts `spec`: its first pass runs now. */
export function startLoop(spec: LoopSpec, deps: LoopDeps): BackgroundLoop {
  const { name, intervalMs } = spec;
  const { logger } = deps;
  const abort = new AbortController();
  let running: Promise<number> | null = null;
  let followUp: Promise<number> | null = null;
  let timer: NodeJS.Timeout | undefined;
  let failures = 0;
  let failingSince: number | null = null;
  let lastFailureLog = 0;

  function warn(what: string, error: unknown) {
    const now = Date.now();
    if (now - lastFailureLog < FAILURE_LOG_EVERY_MS) return;
    lastFailureLog = now;
    logger.warn(`${name}: ${what} failed; retrying`, { error: messageOf(error) });
  }

  /** The interval, doubled per consecutive failure up to the cap. */
  const nextDelayMs = () => Math.min(intervalMs * 2 ** failures, Math.max(intervalMs, MAX_BACKOFF_MS));

  function schedule(delayMs: number) {
    clearTimeout(timer);
    if (abort.signal.aborted) return;
    timer = setTimeout(() => {
      schedule(nextDelayMs());
      if (!running) void runPass();
    }, delayMs);
  }

  async function attempt(): Promise<number> {
    try {
      const count = await spec.pass({ signal: abort.signal, warn });
      if (failingSince !== null) {
        logger.info(`${name} recovered`, { failingForMs: Date.now() - failingSince });
        failingSince = null;
        lastFailureLog = 0;
        failures = 0;
        schedule(intervalMs);
      }
      return count;
    } catch (error) {
      failingSince ??= Date.now();
      failures += 1;
      warn('pass', error);
      schedule(nextDelayMs());
      return 0;
    }
  }

  function runPass(): Promise<number> {
    const pass = attempt().finally(() => {
      running = null;
    });
    running = pass;
    return pass;
  }

  function poke(): Promise<number> {
    if (abort.signal.aborted) return Promise.resolve(0);
    if (!running) return runPass();
    followUp ??= running.then(() => {
      followUp = null;
      return abort.signal.aborted ? 0 : runPass();
    });
    return followUp;
  }

  if (spec.wakeOn && !deps.wakes) throw new Error(`${name}: wakes on ${spec.wakeOn} but was given no listener`);
  const unsubscribe = spec.wakeOn && deps.wakes ? deps.wakes.subscribeChannel(spec.wakeOn, () => void poke()) : () => {};
  schedule(intervalMs);
  void runPass();

  return {
    name,
    poke,
    async stop() {
      abort.abort();
      clearTimeout(timer);
      unsubscribe();
      await running;
      await followUp;
    },
  };
}

export interface RunningLoops {
  readonly loops: readonly BackgroundLoop[];
  /** Stops the loops one after the other, last started first. */
  stop(): Promise<void>;
}

/** Starts `specs` in order. */
export function startLoops(specs: readonly LoopSpec[], deps: LoopDeps): RunningLoops {
  const loops = specs.map((spec) => startLoop(spec, deps));
  return {
    loops,
    async stop() {
      for (const loop of [...loops].reverse()) await loop.stop();
    },
  };
}
