/**
 * Claims ahead of the drain window: while rows flow (the last claim was filled), one claim
 * statement takes at least CLAIM_BATCH due rows and the window is served from what is left of
 * them as its slots free up, so a drain with 8
 * requests in flight claims once per 32 deliveries instead of once per 4 (each claim statement
 * costs PostgreSQL about as much as planning and locking a handful of rows; issue 35 item 1).
 *
 * Rows waiting here are `delivering` with their lease like the ones in flight (renewed every tick
 * with them), are sent in claim order (oldest due first), and go back to the queue, due as they
 * were, when the drain ends before sending them (a cancel or shutdown). A worker killed while
 * they wait leaves them to the lease: recorded as abandoned and sent at once, like an attempt in
 * flight (at least once; docs/webhooks.md).
 */

/** Rows one claim statement asks for at least. */
export const CLAIM_BATCH = 32;

export interface ClaimAheadSource<Row> {
  /** Claims up to `limit` due rows: `claimed` left the queue (some may have ended without an attempt), `items` are to be sent. */
  claim(limit: number): Promise<{ claimed: number; items: Row[] }>;
  /** Puts rows claimed but never sent back in the queue. */
  unclaim(rows: readonly Row[]): Promise<void>;
}

export interface ClaimAhead<Row> {
  /** Up to `limit` rows for the window, claiming what it lacks (at least CLAIM_BATCH while rows flow) when fewer wait here. */
  take(limit: number): Promise<{ claimed: number; items: Row[] }>;
  /** The rows waiting here (their leases are renewed with those in flight). */
  waiting(): readonly Row[];
  /** Ends every waiting row through `end` instead of sending it (e.g. the endpoint was disabled). */
  drop(end: (rows: Row[]) => Promise<void>): Promise<void>;
  /** Returns the waiting rows to the queue (the drain is ending). */
  giveBack(): Promise<void>;
}

export function createClaimAhead<Row>(source: ClaimAheadSource<Row>): ClaimAhead<Row> {
  let rows: Row[] = [];
  // The last claim found as many due rows as it asked for: rows are flowing, so claim ahead.
  // Otherwise claim only what the window asks for, as a drain without claims ahead does
  // (measured: claiming ahead at 50 events/s raised the first attempt's p50 from ~5 to ~60 ms).
  let flowing = false;
  return {
    async take(limit) {
      let claimed = 0;
      if (rows.length < limit) {
        const want = flowing ? Math.max(limit - rows.length, CLAIM_BATCH) : limit - rows.length;
        const got = await source.claim(want);
        flowing = got.claimed >= want;
        // Rows that ended without an attempt count as claimed: the window keeps claiming.
        claimed = got.claimed - got.items.length;
        rows = rows.concat(got.items);
      }
      const items = rows.slice(0, limit);
      rows = rows.slice(items.length);
      return { claimed: claimed + items.length, items };
    },
    waiting: () => rows,
    async drop(end) {
      if (rows.length === 0) return;
      const dropped = rows;
      rows = [];
      await end(dropped);
    },
    async giveBack() {
      if (rows.length === 0) return;
      const unsent = rows;
      rows = [];
      await source.unclaim(unsent);
    },
  };
}
