/**
 * Wake-ups of queue actors from the processes that write their rows, coalesced: at most one per
 * actor per window from one process, so a burst for an actor whose drain is not yet running
 * does not signal Temporal per item. The window stays below the drain's linger (half of it, at
 * most a second), so a drain woken in the window still holds its lease when the window ends and
 * writers see it running. A wake-up that fails is forgotten, so the next write tries again (and
 * the actor's reconciler repeats lost ones).
 */
const WINDOW_MAX_MS = 1_000;
const MAX_REMEMBERED = 10_000;

export function createCoalescedWake(options: { drainLingerMs: number }) {
  const windowMs = Math.min(WINDOW_MAX_MS, options.drainLingerMs / 2);
  const lastWake = new Map<string, number>();
  return {
    /** Runs `wake` for `key` unless one ran within the window; the promise settles when it has (never rejects), null when coalesced. */
    fire(key: string, wake: () => Promise<void>, onError: (error: unknown) => void): Promise<void> | null {
      const nowMs = Date.now();
      if (nowMs - (lastWake.get(key) ?? -Infinity) < windowMs) return null;
      if (lastWake.size >= MAX_REMEMBERED) lastWake.clear();
      lastWake.set(key, nowMs);
      return wake().catch((error: unknown) => {
        lastWake.delete(key);
        onError(error);
      });
    },
  };
}
