/**
 * Connection shaping arithmetic (additive increase, multiplicative decrease), shared by the
 * relay's adaptive pool and the per-destination limits: grow while the receiver keeps accepting,
 * halve on a temporary refusal (421 or another 4xx, or no answer), never past [1, max].
 */
export interface AdaptiveLimitState {
  /** Connections (transactions in flight) allowed now. */
  limit: number;
  /** Successes since the limit last changed. */
  successes: number;
  /** After a refusal: grow by one per `limit` successes, not one per success, until `max` is reached again. */
  cautious: boolean;
}

export function initialLimit(limit: number): AdaptiveLimitState {
  return { limit, successes: 0, cautious: false };
}

/**
 * After a transaction the receiver took. Growth needs demand (`wanted`: more transactions
 * would run if allowed); at first one connection per success (a burst reaches `max` in a few
 * round trips), after a refusal one per `limit` successes.
 */
export function afterSuccess(state: AdaptiveLimitState, max: number, wanted = true): AdaptiveLimitState {
  if (!wanted || state.limit >= max) return { ...state, limit: Math.min(state.limit, max), successes: 0 };
  const successes = state.successes + 1;
  if (successes < (state.cautious ? state.limit : 1)) return { ...state, successes };
  const limit = state.limit + 1;
  return { limit, successes: 0, cautious: state.cautious && limit < max };
}

/** After a temporary refusal: half the connections (at least one), and cautious growth from there. */
export function afterTemporaryFailure(state: AdaptiveLimitState): AdaptiveLimitState {
  return { limit: Math.max(1, Math.floor(state.limit / 2)), successes: 0, cautious: true };
}

/** A destination's back-off: consecutive refusals lengthen the pause before the next try, successes shorten it again. */
export interface Backoff {
  level: number;
  /** No transaction to the destination before this time (ms since the epoch). */
  pausedUntil: number;
}

export interface BackoffSettings {
  baseMs: number;
  maxMs: number;
}

const MAX_LEVEL = 20;

/** The pause after a refusal at `level` (1, 2, 3…): base, doubling, capped at max. */
export function backoffDelay(level: number, settings: BackoffSettings): number {
  return Math.min(settings.maxMs, settings.baseMs * 2 ** Math.max(0, level - 1));
}

export function backoffAfterFailure(backoff: Backoff, now: number, settings: BackoffSettings): Backoff {
  const level = Math.min(MAX_LEVEL, backoff.level + 1);
  return { level, pausedUntil: now + backoffDelay(level, settings) };
}

export function backoffAfterSuccess(backoff: Backoff): Backoff {
  return { level: Math.max(0, backoff.level - 1), pausedUntil: backoff.pausedUntil };
}

/** How a transaction went, for shaping: taken (any final answer), refused for now, or neither (not counted). */
export type ShapingOutcome = 'accepted' | 'temporary' | 'ignored';

/**
 * An in-process gate of adaptive size: at most `limit` holders at once, the limit moving with
 * the outcomes reported at release (the relay's pool: nodemailer opens a connection per message
 * in flight up to its own maximum, so the messages in flight are the connections used).
 */
export function createAdaptiveGate(options: { initial: number; max: number }) {
  const max = Math.max(options.initial, options.max);
  let state = initialLimit(Math.min(options.initial, max));
  let inFlight = 0;
  const waiting: (() => void)[] = [];

  function admit(): void {
    while (inFlight < state.limit && waiting.length > 0) {
      inFlight += 1;
      waiting.shift()!();
    }
  }

  return {
    /** Waits for a slot; the returned release reports how the transaction went. */
    async acquire(): Promise<(outcome: ShapingOutcome) => void> {
      if (inFlight < state.limit && waiting.length === 0) inFlight += 1;
      else await new Promise<void>((resolve) => waiting.push(resolve));
      let released = false;
      return (outcome) => {
        if (released) return;
        released = true;
        inFlight -= 1;
        if (outcome === 'accepted') state = afterSuccess(state, max, waiting.length > 0 || inFlight + 1 >= state.limit);
        else if (outcome === 'temporary') state = afterTemporaryFailure(state);
        admit();
      };
    },
    /** The limit now and the transactions in flight (metrics, tests). */
    snapshot: () => ({ limit: state.limit, inFlight, waiting: waiting.length, max }),
  };
}

export type AdaptiveGate = ReturnType<typeof createAdaptiveGate>;
