import { performance } from 'node:perf_hooks';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { releaseMemoryWhenIdle } from '../../src/cli/start-process.ts';
import { WORKER_HEAP_MB } from '../../src/cli/node-flags.mjs';
import { nodeFlagsFor } from '../../src/dev/paths.ts';
import { DEV_SETTINGS } from '../../src/settings/dev-settings.ts';
import { fallbackOf } from '../../src/settings/setting.ts';

describe('nodeFlagsFor', () => {
  it('gives the api and the all-in-one process a 32 MB young generation, the others 8 MB, and only the all-in-one process gc', () => {
    expect(nodeFlagsFor('api', {})).toEqual(['--max-semi-space-size=32']);
    expect(nodeFlagsFor('all', {})).toEqual(['--max-old-space-size=512', '--max-semi-space-size=32', '--expose-gc']);
    expect(nodeFlagsFor('worker', { HERALD_WORKER_HEAP_MB: '768' })).toEqual(['--max-old-space-size=768', '--max-semi-space-size=8']);
    expect(nodeFlagsFor('smtp', {})).toEqual(['--max-semi-space-size=8']);
    // `herald dev` (npm start) is the all-in-one process; commands that are not processes get none.
    expect(nodeFlagsFor('dev', {})).toEqual(nodeFlagsFor('all', {}));
    expect(nodeFlagsFor('migrate', {})).toEqual([]);
    expect(nodeFlagsFor('all', { HERALD_WORKER_HEAP_MB: '0' })).toEqual(['--max-semi-space-size=32', '--expose-gc']);
  });

  it("defaults the worker's heap limit to the documented setting's default", () => {
    expect(WORKER_HEAP_MB).toBe(Number(fallbackOf(DEV_SETTINGS.HERALD_WORKER_HEAP_MB)));
  });
});

describe('releaseMemoryWhenIdle', () => {
  const gc = vi.fn();
  let utilization = 0;
  let active = 0;
  let idle = 0;
  let original: typeof globalThis.gc;
  const MB = 2 ** 20;
  let heapTotal = 0;

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout'] });
    original = globalThis.gc;
    globalThis.gc = gc;
    gc.mockClear();
    // V8's committed heap: each collection gives it back, work grows it.
    heapTotal = 200 * MB;
    gc.mockImplementation(() => {
      heapTotal = 100 * MB;
    });
    vi.spyOn(process, 'memoryUsage').mockImplementation(() => ({ rss: 0, heapTotal, heapUsed: 0, external: 0, arrayBuffers: 0 }));
    // The event loop's busy and idle time, accumulated every 10 ms at the current `utilization`;
    // a reading's difference to the previous one is what the real function computes.
    active = 0;
    idle = 0;
    setInterval(() => {
      active += 10 * utilization;
      idle += 10 * (1 - utilization);
      if (utilization >= 0.1) heapTotal = 200 * MB;
    }, 10);
    type Reading = { idle: number; active: number; utilization: number };
    vi.spyOn(performance, 'eventLoopUtilization').mockImplementation((current?: Reading, previous?: Reading) => {
      if (current === undefined || previous === undefined) return { idle, active, utilization: 0 };
      const busy = current.active - previous.active;
      const total = busy + current.idle - previous.idle;
      return { idle: current.idle - previous.idle, active: busy, utilization: total > 0 ? busy / total : 0 };
    });
  });

  afterEach(() => {
    globalThis.gc = original;
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  it('collects with the memory-reducing flavour once start-up is over and after each busy period, never while busy or long idle', () => {
    const stop = releaseMemoryWhenIdle();
    // Not at once: the process has just become ready and clients may be calling it.
    expect(gc).not.toHaveBeenCalled();
    utilization = 0.3;
    vi.advanceTimersByTime(5_000);
    expect(gc).not.toHaveBeenCalled();
    utilization = 0.005;
    vi.advanceTimersByTime(5_000);
    expect(gc).toHaveBeenCalledTimes(1);
    expect(gc).toHaveBeenCalledWith({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    vi.advanceTimersByTime(30_000);
    expect(gc).toHaveBeenCalledTimes(1);
    utilization = 0.6;
    vi.advanceTimersByTime(20_000);
    expect(gc).toHaveBeenCalledTimes(1);
    utilization = 0.005;
    vi.advanceTimersByTime(5_000);
    expect(gc).toHaveBeenCalledTimes(2);
    vi.advanceTimersByTime(60_000);
    expect(gc).toHaveBeenCalledTimes(2);
    // A light load after a burst (between the two thresholds) waits for real idleness.
    utilization = 0.5;
    vi.advanceTimersByTime(5_000);
    utilization = 0.05;
    vi.advanceTimersByTime(30_000);
    expect(gc).toHaveBeenCalledTimes(2);
    utilization = 0;
    vi.advanceTimersByTime(5_000);
    expect(gc).toHaveBeenCalledTimes(3);
    stop();
    utilization = 0.6;
    vi.advanceTimersByTime(5_000);
    utilization = 0;
    vi.advanceTimersByTime(5_000);
    expect(gc).toHaveBeenCalledTimes(3);
  });

  it('does not collect when a load begins at the end of an idle stretch', () => {
    const stop = releaseMemoryWhenIdle();
    utilization = 0.3;
    vi.advanceTimersByTime(5_000);
    utilization = 0;
    vi.advanceTimersByTime(4_900);
    // Requests arrive 100 ms before the fifth idle second ends: 2 % of a 5 s window, 10 % of a second.
    utilization = 1;
    vi.advanceTimersByTime(3_100);
    expect(gc).not.toHaveBeenCalled();
    utilization = 0;
    vi.advanceTimersByTime(5_000);
    expect(gc).toHaveBeenCalledTimes(1);
    stop();
  });

  it('does not count its own collection as a busy period: one release per busy period, however long the idle', () => {
    // The collection runs in the watch's callback and holds the event loop (0.2–1.2 s measured).
    gc.mockImplementation(() => {
      active += 600;
      heapTotal = 100 * MB;
    });
    const stop = releaseMemoryWhenIdle();
    utilization = 0.6;
    vi.advanceTimersByTime(5_000);
    utilization = 0;
    vi.advanceTimersByTime(60_000);
    expect(gc).toHaveBeenCalledTimes(1);
    utilization = 0.6;
    vi.advanceTimersByTime(5_000);
    utilization = 0;
    vi.advanceTimersByTime(60_000);
    expect(gc).toHaveBeenCalledTimes(2);
    stop();
  });

  it("does not release again after a busy second that grew no heap (V8's own memory reducer)", () => {
    const stop = releaseMemoryWhenIdle();
    vi.advanceTimersByTime(5_000);
    expect(gc).toHaveBeenCalledTimes(1);
    // Three seconds later V8's memory reducer marks incrementally for most of a second: busy, no growth.
    vi.advanceTimersByTime(3_000);
    active += 700;
    vi.advanceTimersByTime(30_000);
    expect(gc).toHaveBeenCalledTimes(1);
    // A load grows the heap again: released once it ends.
    utilization = 0.6;
    vi.advanceTimersByTime(2_000);
    utilization = 0;
    vi.advanceTimersByTime(30_000);
    expect(gc).toHaveBeenCalledTimes(2);
    stop();
  });

  it('does nothing without gc exposed', () => {
    globalThis.gc = undefined;
    const stop = releaseMemoryWhenIdle();
    vi.advanceTimersByTime(60_000);
    stop();
    expect(gc).not.toHaveBeenCalled();
  });
});
