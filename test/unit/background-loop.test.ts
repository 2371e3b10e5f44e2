import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from '../../src/logger.ts';
import { startLoop, startLoops, type LoopSpec, type PassContext } from '../../src/queue/background-loop.ts';
import type { ListenChannel } from '../../src/queue/wakes.ts';

function recordingLogger() {
  const lines: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const logger: Logger = {
    debug: (message, fields) => lines.push({ level: 'debug', message, fields }),
    info: (message, fields) => lines.push({ level: 'info', message, fields }),
    warn: (message, fields) => lines.push({ level: 'warn', message, fields }),
    error: (message, fields) => lines.push({ level: 'error', message, fields }),
    child: () => logger,
  };
  return { logger, lines };
}

/** A stand-in for the process's listener: `notify(channel)` is what a NOTIFY would do. */
function fakeWakes() {
  const subscribers = new Map<string, Set<() => void>>();
  return {
    subscribeChannel(channel: ListenChannel, onNotify: () => void) {
      const set = subscribers.get(channel) ?? new Set();
      subscribers.set(channel, set);
      set.add(onNotify);
      return () => set.delete(onNotify);
    },
    notify(channel: string) {
      for (const onNotify of subscribers.get(channel) ?? []) onNotify();
    },
    count: (channel: string) => subscribers.get(channel)?.size ?? 0,
  };
}

/** A pass the test finishes by hand: `passes` lists the passes started, `finish(i)` resolves one. */
function manualPasses() {
  const passes: { context: PassContext; resolve(count: number): void; reject(error: Error): void }[] = [];
  const pass = (context: PassContext) =>
    new Promise<number>((resolve, reject) => {
      passes.push({ context, resolve, reject });
    });
  return { passes, pass };
}

const flush = () => vi.advanceTimersByTimeAsync(0);

describe('background loops', () => {
  afterEach(() => vi.useRealTimers());

  it('runs a pass at start and then one per interval, dropping a tick while a pass runs', async () => {
    vi.useFakeTimers();
    const { logger } = recordingLogger();
    const { passes, pass } = manualPasses();
    const loop = startLoop({ name: 'test loop', intervalMs: 1_000, pass }, { logger });
    expect(passes).toHaveLength(1);
    passes[0]!.resolve(0);
    await vi.advanceTimersByTimeAsync(999);
    expect(passes).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(passes).toHaveLength(2);
    // Still running at the next tick: no second pass beside it.
    await vi.advanceTimersByTimeAsync(1_000);
    expect(passes).toHaveLength(2);
    passes[1]!.resolve(3);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(passes).toHaveLength(3);
    passes[2]!.resolve(0);
    await loop.stop();
  });

  it('runs a pass at once when its channel is notified, and once more after the pass in flight', async () => {
    vi.useFakeTimers();
    const { logger } = recordingLogger();
    const wakes = fakeWakes();
    const { passes, pass } = manualPasses();
    const loop = startLoop({ name: 'test loop', intervalMs: 60_000, wakeOn: 'herald_events', pass }, { logger, wakes });
    passes[0]!.resolve(0);
    await flush();

    wakes.notify('herald_events');
    expect(passes).toHaveLength(2);
    // Two more notifications during that pass ask for one pass after it, not two.
    wakes.notify('herald_events');
    wakes.notify('herald_events');
    wakes.notify('herald_send_wake');
    expect(passes).toHaveLength(2);
    passes[1]!.resolve(5);
    await flush();
    expect(passes).toHaveLength(3);
    passes[2]!.resolve(0);
    await flush();
    expect(passes).toHaveLength(3);

    // A poke resolves with the count of a pass that began after it.
    const poked = loop.poke();
    expect(passes).toHaveLength(4);
    passes[3]!.resolve(7);
    expect(await poked).toBe(7);

    await loop.stop();
    expect(wakes.count('herald_events')).toBe(0);
    wakes.notify('herald_events');
    expect(passes).toHaveLength(4);
  });

  it('backs off its interval passes while passes fail, logs the failure once and the recovery', async () => {
    vi.useFakeTimers();
    const { logger, lines } = recordingLogger();
    const starts: number[] = [];
    let failing = true;
    const spec: LoopSpec = {
      name: 'test loop',
      intervalMs: 1_000,
      pass: () => {
        starts.push(Date.now());
        return failing ? Promise.reject(new Error('database away')) : Promise.resolve(1);
      },
    };
    const started = Date.now();
    const loop = startLoop(spec, { logger });
    await vi.advanceTimersByTimeAsync(2_000 + 4_000 + 8_000);
    // Failed at 0, then waits 2 s, 4 s, 8 s.
    expect(starts.map((at) => at - started)).toEqual([0, 2_000, 6_000, 14_000]);
    expect(lines.filter((line) => line.level === 'warn')).toEqual([
      { level: 'warn', message: 'test loop: pass failed; retrying', fields: { error: 'database away' } },
    ]);

    // A poke is not held back by the backoff; its success ends it.
    failing = false;
    expect(await loop.poke()).toBe(1);
    expect(lines.at(-1)).toMatchObject({ level: 'info', message: 'test loop recovered' });
    const recoveredAt = Date.now();
    await vi.advanceTimersByTimeAsync(2_000);
    expect(starts.slice(-2).map((at) => at - recoveredAt)).toEqual([1_000, 2_000]);
    await loop.stop();
  });

  it('caps the backoff at 30 s', async () => {
    vi.useFakeTimers();
    const { logger } = recordingLogger();
    const starts: number[] = [];
    const loop = startLoop(
      { name: 'test loop', intervalMs: 5_000, pass: () => Promise.reject(new Error(String(starts.push(Date.now())))) },
      { logger },
    );
    await vi.advanceTimersByTimeAsync(200_000);
    const gaps = starts.slice(1).map((at, i) => at - starts[i]!);
    expect(gaps.slice(0, 4)).toEqual([10_000, 20_000, 30_000, 30_000]);
    await loop.stop();
  });

  it('stop() aborts the pass in flight, waits for it and runs no further pass', async () => {
    vi.useFakeTimers();
    const { logger } = recordingLogger();
    const { passes, pass } = manualPasses();
    const loop = startLoop({ name: 'test loop', intervalMs: 1_000, pass }, { logger });
    const followUp = loop.poke();
    let stopped = false;
    const stopping = loop.stop().then(() => {
      stopped = true;
    });
    await flush();
    expect(passes[0]!.context.signal.aborted).toBe(true);
    expect(stopped).toBe(false);
    passes[0]!.resolve(2);
    await stopping;
    expect(await followUp).toBe(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(passes).toHaveLength(1);
    expect(await loop.poke()).toBe(0);
  });

  it('stops a list of loops last started first, each after its pass in flight', async () => {
    vi.useFakeTimers();
    const { logger } = recordingLogger();
    const order: string[] = [];
    const spec = (name: string): LoopSpec => ({
      name,
      intervalMs: 1_000,
      pass: ({ signal }) =>
        new Promise((resolve) => {
          signal.addEventListener('abort', () => {
            order.push(name);
            resolve(0);
          });
        }),
    });
    const loops = startLoops([spec('first'), spec('second'), spec('third')], { logger });
    expect(loops.loops.map((loop) => loop.name)).toEqual(['first', 'second', 'third']);
    await loops.stop();
    expect(order).toEqual(['third', 'second', 'first']);
  });
});
