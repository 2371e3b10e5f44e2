/**
 * The sliding window a queue drain runs inside its frame (drainer.ts): keep up to
 * `concurrency` items in flight, claiming due rows as slots free up (half the window at a
 * time, so claims stay few and large); once nothing is due and nothing is in flight, linger up
 * to `lingerMs` for a wake-up or a row falling due meanwhile, then return. `tick` runs at least
 * every `tickMs` (heartbeat, lease refresh); `settle` commits what is buffered before lingering
 * and at the end. An abort stops claiming; items in flight always finish.
 */

export interface DrainWindowOptions<T> {
  concurrency: number;
  lingerMs: number;
  tickMs: number;
  signal: AbortSignal;
  /** Claims up to `limit` due rows: `claimed` rows left the queue, `items` of them are to be run. */
  claim(limit: number): Promise<{ claimed: number; items: T[] }>;
  /** Runs one item; a rejection stops the drain (after the items in flight) and is rethrown. */
  run(item: T): Promise<void>;
  tick(): Promise<void>;
  settle(): Promise<void>;
  /** Epoch ms when the next open row falls due, or null. */
  nextDue(): Promise<number | null>;
  /** A row is due yet was not claimed (e.g. an attempt whose lease lapsed): true when something was done about it. */
  onDueUnclaimed(): Promise<boolean>;
  /** Registers for in-process wake-ups; returns the unsubscribe function. */
  subscribe(onWake: () => void): () => void;
  /**
   * A claim that returns fewer rows than asked took every due row, and a row that falls due
   * later comes with a wake-up (its writer NOTIFYs) or is found by `nextDue`: after such a claim
   * the window claims again only after a wake-up, a tick or a due time, not each time a slot
   * frees (those claims would find nothing). Without it, every freed slot claims.
   */
  claimsAllDue?: boolean;
}

/** How long a flowing drain waits for half its window to free up before it claims fewer rows. */
const CLAIM_BATCH_WAIT_MS = 50;

/** Resolves the next `wait()` once something happens (a slot freed, a wake-up, a timer). */
function createNudge() {
  let resolve: (() => void) | null = null;
  let pending = false;
  return {
    nudge() {
      pending = true;
      resolve?.();
    },
    wait(ms: number): Promise<void> {
      if (pending) {
        pending = false;
        return Promise.resolve();
      }
      return new Promise<void>((done) => {
        const finish = () => {
          clearTimeout(timer);
          resolve = null;
          pending = false;
          done();
        };
        const timer = setTimeout(finish, ms);
        resolve = finish;
      });
    },
  };
}

export async function drainWindow<T>(options: DrainWindowOptions<T>): Promise<void> {
  const { concurrency, tickMs, signal } = options;
  const nudge = createNudge();
  /** The last claim took every due row (with claimsAllDue), and nothing since could have made more due. */
  let drained = false;
  const unsubscribe = options.subscribe(() => {
    drained = false;
    nudge.nudge();
  });
  const onAbort = () => nudge.nudge();
  signal.addEventListener('abort', onAbort);
  let inFlight = 0;
  let failure: unknown;
  let lastTick = Date.now();
  let lastClaimAt = 0;
  let lastClaimFilled = false;
  try {
    let lingerUntil: number | null = null;
    while (failure === undefined && !signal.aborted) {
      if (Date.now() - lastTick >= tickMs) {
        await options.tick();
        lastTick = Date.now();
        drained = false;
      }
      const free = concurrency - inFlight;
      if (drained && inFlight > 0) {
        await nudge.wait(tickMs);
        continue;
      }
      // While items flow (the last claim was filled, moments ago), wait until half the window is
      // free: fewer, larger claims. Otherwise, or once CLAIM_BATCH_WAIT_MS has passed, fill
      // whatever is free (a slow receiver must not leave free slots idle).
      const sinceClaim = Date.now() - lastClaimAt;
      if (free === 0 || (lastClaimFilled && free < Math.ceil(concurrency / 2) && sinceClaim < CLAIM_BATCH_WAIT_MS)) {
        await nudge.wait(free === 0 ? tickMs : CLAIM_BATCH_WAIT_MS - sinceClaim);
        continue;
      }
      // Nothing can have become due since a claim took every due row: skip the claim, go idle.
      const skipped: boolean = drained;
      const { claimed, items }: { claimed: number; items: T[] } = skipped ? { claimed: 0, items: [] } : await options.claim(free);
      if (!skipped) {
        lastClaimAt = Date.now();
        lastClaimFilled = claimed >= free;
        drained = options.claimsAllDue === true && !lastClaimFilled;
      }
      for (const item of items) {
        inFlight += 1;
        options
          .run(item)
          .catch((error: unknown) => {
            failure ??= error;
          })
          .finally(() => {
            inFlight -= 1;
            nudge.nudge();
          });
      }
      if (claimed > 0) {
        lingerUntil = null;
        continue;
      }
      if (inFlight > 0) {
        await nudge.wait(tickMs);
        continue;
      }
      await options.settle();
      lingerUntil ??= Date.now() + options.lingerMs;
      const left = lingerUntil - Date.now();
      if (left <= 0) break;
      const due = await options.nextDue();
      if (due !== null && due <= lingerUntil) {
        if (due > Date.now()) {
          await nudge.wait(due - Date.now());
          drained = false;
          continue;
        }
        drained = false;
        // A row fell due after the last claim (its wake-up still on the way): claim it.
        if (skipped) continue;
        if (await options.onDueUnclaimed()) continue;
        break;
      }
      await nudge.wait(Math.min(left, tickMs));
      drained = false;
    }
    while (inFlight > 0) await nudge.wait(tickMs);
    await options.settle();
  } finally {
    signal.removeEventListener('abort', onAbort);
    unsubscribe();
  }
  if (failure !== undefined) throw failure instanceof Error ? failure : new Error('drain failed', { cause: failure });
}
