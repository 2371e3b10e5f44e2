import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../../../logger.ts';
import { redisKeys } from '../../../redis/keys.ts';
import {
  afterSuccess,
  afterTemporaryFailure,
  backoffAfterFailure,
  backoffAfterSuccess,
  initialLimit,
  type AdaptiveLimitState,
  type Backoff,
  type BackoffSettings,
  type ShapingOutcome,
} from './adaptive-limit.ts';
import { ACQUIRE_SCRIPT, RELEASE_SCRIPT } from './shaping-scripts.ts';

/** Per-destination limits (SMTP_DESTINATION_*), for one destination (an MX rollup key) across every worker. */
export interface DestinationShapingSettings {
  /** Transactions in flight to one destination at most; halved on a refusal, grown back on success. */
  connections: number;
  /** Messages (transactions) per minute to one destination at most; 0: no rate limit. */
  ratePerMinute: number;
  backoff: BackoffSettings;
}

/** A transaction may start (release it with how it went), or the destination has no room now. */
export type ShapingDecision =
  { kind: 'granted'; release(outcome: ShapingOutcome): void } | { kind: 'wait'; retryInMs: number; backingOff: boolean };

export interface DestinationShaper {
  acquire(destination: string): Promise<ShapingDecision>;
  close(): void;
}

/** A lease on a slot: a worker that dies holding one frees it after this long. */
const LEASE_MS = 180_000;
/** After a Redis failure, the limits are this process's own for this long before Redis is tried again. */
const LOCAL_FOR_MS = 10_000;
/** How soon to look again when a destination's slots are all taken. */
const SLOT_RETRY_MS = 50;

interface LocalState {
  limit: AdaptiveLimitState;
  backoff: Backoff;
  inFlight: number;
  tokens: number;
  ts: number;
}

const burstOf = (settings: DestinationShapingSettings) => Math.max(1, Math.ceil(settings.ratePerMinute / 60));

/**
 * The same limits in this process only: what a worker falls back to while Redis does not answer
 * (each worker then allows the full budget, so N workers may together reach N times it).
 */
export function createLocalShaper(settings: DestinationShapingSettings, now: () => number = Date.now): DestinationShaper {
  const states = new Map<string, LocalState>();
  const perMs = settings.ratePerMinute / 60_000;
  const stateOf = (destination: string): LocalState => {
    let state = states.get(destination);
    if (!state) {
      state = {
        limit: initialLimit(settings.connections),
        backoff: { level: 0, pausedUntil: 0 },
        inFlight: 0,
        tokens: burstOf(settings),
        ts: now(),
      };
      states.set(destination, state);
    }
    return state;
  };
  return {
    acquire(destination) {
      const state = stateOf(destination);
      const at = now();
      if (state.backoff.pausedUntil > at)
        return Promise.resolve({ kind: 'wait', retryInMs: state.backoff.pausedUntil - at, backingOff: true });
      if (state.inFlight >= state.limit.limit) return Promise.resolve({ kind: 'wait', retryInMs: SLOT_RETRY_MS, backingOff: false });
      if (perMs > 0) {
        state.tokens = Math.min(burstOf(settings), state.tokens + (at - state.ts) * perMs);
        state.ts = at;
        if (state.tokens < 1) return Promise.resolve({ kind: 'wait', retryInMs: Math.ceil((1 - state.tokens) / perMs), backingOff: false });
        state.tokens -= 1;
      }
      state.inFlight += 1;
      let released = false;
      return Promise.resolve({
        kind: 'granted',
        release(outcome) {
          if (released) return;
          released = true;
          state.inFlight -= 1;
          if (outcome === 'accepted') {
            state.limit = afterSuccess(state.limit, settings.connections);
            state.backoff = backoffAfterSuccess(state.backoff);
          } else if (outcome === 'temporary') {
            state.limit = afterTemporaryFailure(state.limit);
            state.backoff = backoffAfterFailure(state.backoff, now(), settings.backoff);
          }
        },
      });
    },
    close() {
      states.clear();
    },
  };
}

type AcquireCommand = (...args: (string | number)[]) => Promise<[number, number, number]>;
type ReleaseCommand = (...args: (string | number)[]) => Promise<[number, number, number]>;

/**
 * Per-destination shaping shared by every worker process through Redis: one state per
 * destination (slots in flight, the adaptive limit, the back-off, the rate bucket). Redis is
 * never in delivery's way: a command that fails or times out (the client's own short timeout,
 * src/redis/client.ts) switches this process to its local limits for a while, logged once per
 * outage, and a release that cannot reach Redis leaves the slot to its lease.
 */
export function createDestinationShaper(options: {
  redis: Redis;
  settings: DestinationShapingSettings;
  logger: Logger;
}): DestinationShaper {
  const { redis, settings, logger } = options;
  const local = createLocalShaper(settings);
  redis.defineCommand('heraldShapeAcquire', { numberOfKeys: 2, lua: ACQUIRE_SCRIPT });
  redis.defineCommand('heraldShapeRelease', { numberOfKeys: 2, lua: RELEASE_SCRIPT });
  const commands = redis as unknown as { heraldShapeAcquire: AcquireCommand; heraldShapeRelease: ReleaseCommand };
  const perMs = settings.ratePerMinute / 60_000;
  let localUntil = 0;
  /** Pauses this process has seen, by destination: a paused destination's messages are deferred without asking Redis again. */
  const pauses = new Map<string, number>();
  const pauseSeen = (destination: string, retryInMs: number) => {
    if (pauses.size > 10_000) pauses.clear();
    pauses.set(destination, Date.now() + retryInMs);
  };

  function degrade(error: unknown): void {
    if (Date.now() >= localUntil) {
      logger.warn('destination shaping: Redis did not answer; limits are per worker until it does', {
        error: error instanceof Error ? error.message : String(error),
      });
    }
    localUntil = Date.now() + LOCAL_FOR_MS;
  }

  function releaseInRedis(destination: string, token: string, outcome: ShapingOutcome): void {
    const { state, inFlight } = redisKeys.destinationShaping(destination);
    commands
      .heraldShapeRelease(state, inFlight, token, outcome, settings.connections, settings.backoff.baseMs, settings.backoff.maxMs)
      .then(([, , pausedMs]) => {
        if (pausedMs > 0) pauseSeen(destination, pausedMs);
      }, degrade);
  }

  return {
    async acquire(destination) {
      // Not connected yet (start-up) or reconnecting: this worker's own limits (the client logs the outage).
      if (redis.status !== 'ready' || Date.now() < localUntil) return local.acquire(destination);
      const pausedUntil = pauses.get(destination) ?? 0;
      if (pausedUntil > Date.now()) return { kind: 'wait', retryInMs: pausedUntil - Date.now(), backingOff: true };
      const { state, inFlight } = redisKeys.destinationShaping(destination);
      const token = randomBytes(8).toString('hex');
      let answer: [number, number, number];
      try {
        answer = await commands.heraldShapeAcquire(state, inFlight, settings.connections, perMs, burstOf(settings), LEASE_MS, token);
      } catch (error) {
        degrade(error);
        return local.acquire(destination);
      }
      const [granted, retryInMs, backingOff] = answer;
      if (granted !== 1) {
        if (backingOff === 1) pauseSeen(destination, Number(retryInMs));
        return { kind: 'wait', retryInMs: Number(retryInMs), backingOff: backingOff === 1 };
      }
      let released = false;
      return {
        kind: 'granted',
        release(outcome) {
          if (released) return;
          released = true;
          releaseInRedis(destination, token, outcome);
        },
      };
    },
    close() {
      local.close();
      redis.disconnect();
    },
  };
}
