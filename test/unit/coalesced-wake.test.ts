import { afterEach, describe, expect, it, vi } from 'vitest';
import { createCoalescedWake } from '../../src/queue/coalesced-wake.ts';

describe('createCoalescedWake', () => {
  afterEach(() => vi.useRealTimers());

  it('wakes an actor once per window, each actor apart, and again after the window', async () => {
    vi.useFakeTimers();
    const wakes = createCoalescedWake({ drainLingerMs: 2_000 });
    const woken: string[] = [];
    const fire = (key: string) =>
      wakes.fire(
        key,
        () => Promise.resolve(void woken.push(key)),
        () => {},
      );
    await fire('a');
    expect(fire('a')).toBeNull();
    await fire('b');
    vi.advanceTimersByTime(999);
    expect(fire('a')).toBeNull();
    vi.advanceTimersByTime(1);
    await fire('a');
    expect(woken).toEqual(['a', 'b', 'a']);
  });

  it('keeps the window below the drain linger (half of it)', async () => {
    vi.useFakeTimers();
    const wakes = createCoalescedWake({ drainLingerMs: 100 });
    let count = 0;
    const fire = () =>
      wakes.fire(
        'a',
        () => Promise.resolve(void (count += 1)),
        () => {},
      );
    await fire();
    vi.advanceTimersByTime(49);
    expect(fire()).toBeNull();
    vi.advanceTimersByTime(1);
    await fire();
    expect(count).toBe(2);
  });

  it('forgets a wake-up that failed, so the next write tries again, and reports the error', async () => {
    const wakes = createCoalescedWake({ drainLingerMs: 2_000 });
    const errors: unknown[] = [];
    await wakes.fire(
      'a',
      () => Promise.reject(new Error('temporal away')),
      (error) => errors.push(error),
    );
    expect(errors).toHaveLength(1);
    let woken = false;
    await wakes.fire(
      'a',
      () => Promise.resolve(void (woken = true)),
      () => {},
    );
    expect(woken).toBe(true);
  });
});
