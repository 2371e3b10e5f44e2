/**
 * Per-endpoint concurrency limit of one worker process: at most `limit` attempts to the same
 * endpoint are in flight at once. A caller waits at most `waitMs` for a slot (first come,
 * first served) and otherwise gets null, so an attempt to a slow endpoint gives its activity
 * slot back quickly (the workflow tries again shortly) instead of holding it while the endpoint
 * hangs. Attempts to other endpoints never wait for it.
 */

export const DEFAULT_ENDPOINT_CONCURRENCY = 8;
export const DEFAULT_ENDPOINT_WAIT_MS = 1_000;

export interface EndpointLimiter {
  /** A release function once a slot is held, or null when none freed up within the wait. */
  acquire(endpointId: string): Promise<(() => void) | null>;
  /** Attempts in flight to `endpointId` (for tests and diagnostics). */
  inFlight(endpointId: string): number;
}

interface Lane {
  active: number;
  waiters: ((granted: boolean) => void)[];
}

export function createEndpointLimiter(
  options: { limit?: number; waitMs?: number } = {},
): EndpointLimiter {
  const limit = options.limit ?? DEFAULT_ENDPOINT_CONCURRENCY;
  const waitMs = options.waitMs ?? DEFAULT_ENDPOINT_WAIT_MS;
  const lanes = new Map<string, Lane>();

  function releaser(endpointId: string, lane: Lane): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = lane.waiters.shift();
      if (next) {
        next(true);
        return;
      }
      lane.active -= 1;
      if (lane.active === 0) lanes.delete(endpointId);
    };
  }

  return {
    async acquire(endpointId) {
      let lane = lanes.get(endpointId);
      if (!lane) {
        lane = { active: 0, waiters: [] };
        lanes.set(endpointId, lane);
      }
      if (lane.active < limit) {
        lane.active += 1;
        return releaser(endpointId, lane);
      }
      const current = lane;
      const granted = await new Promise<boolean>((resolve) => {
        const waiter = (ok: boolean) => {
          clearTimeout(timer);
          resolve(ok);
        };
        const timer = setTimeout(() => {
          const index = current.waiters.indexOf(waiter);
          if (index >= 0) current.waiters.splice(index, 1);
          resolve(false);
        }, waitMs);
        current.waiters.push(waiter);
      });
      // A granted slot is handed over by the releaser without changing `active`.
      return granted ? releaser(endpointId, current) : null;
    },

    inFlight(endpointId) {
      return lanes.get(endpointId)?.active ?? 0;
    },
  };
}
