/**
 * Stored member counts (segments.member_count, counted_at), for pages that list segments at any
 * workspace size without counting members on the request:
 * - a `static` segment's stored count is exact: triggers on segment_members keep it in the
 *   transaction of every membership write (Migration20261129050000);
 * - a `tag` or `all` segment's is its last full count, taken at `counted_at`: an estimate that
 *   pages show with its time. `refreshStale` recounts the ones older than `maxAgeMs` (or never
 *   counted) after the page is answered, one refresh per segment at a time in this process.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Segment } from '../../../db/entities/index.ts';
import type { Logger } from '../../logger.ts';
import { storeSegmentCounts } from './segments.repo.ts';

/** How old a dynamic segment's stored count may be before a page that shows it starts a recount. */
export const SEGMENT_COUNT_MAX_AGE_MS = 60_000;

/** A stored member count as pages show it. */
export interface StoredCount {
  /** null: a dynamic segment not counted yet. */
  count: number | null;
  /** True for a static segment (kept exact); false for a dynamic one's last count. */
  exact: boolean;
  /** When a dynamic segment was last counted (null for static ones and ones never counted). */
  countedAt: Date | null;
}

/** The stored count of `segment`, with what it means. */
export function storedCountOf(segment: Pick<Segment, 'type' | 'memberCount' | 'countedAt'>): StoredCount {
  if (segment.type === 'static') return { count: segment.memberCount ?? 0, exact: true, countedAt: null };
  return { count: segment.countedAt ? (segment.memberCount ?? 0) : null, exact: false, countedAt: segment.countedAt ?? null };
}

/** Whether a dynamic segment's stored count is missing or older than `maxAgeMs` at `now`. */
export function isStale(segment: Pick<Segment, 'type' | 'countedAt'>, now: Date, maxAgeMs = SEGMENT_COUNT_MAX_AGE_MS): boolean {
  if (segment.type === 'static') return false;
  return !segment.countedAt || now.getTime() - segment.countedAt.getTime() >= maxAgeMs;
}

export function createSegmentCountRefresher({ orm, logger }: { orm: MikroORM; logger?: Pick<Logger, 'warn'> | undefined }) {
  const running = new Set<string>();

  /** Counts the segments' members now (exactly) and stores each count with the time. */
  async function refresh(orgId: string, segmentIds: readonly string[]): Promise<void> {
    if (segmentIds.length > 0) await storeSegmentCounts(orm.em.fork(), orgId, segmentIds);
  }

  return {
    refresh,

    /**
     * Starts a recount of the dynamic segments among `segments` whose stored count is stale and
     * that this process is not recounting already; returns at once (the recount's failure is
     * logged: the page keeps the older count and the next view tries again).
     */
    refreshStale(orgId: string, segments: readonly Pick<Segment, 'id' | 'type' | 'countedAt'>[], now = new Date()): void {
      const ids = segments.filter((s) => isStale(s, now) && !running.has(s.id)).map((s) => s.id);
      if (ids.length === 0) return;
      for (const id of ids) running.add(id);
      void refresh(orgId, ids)
        .catch((error: unknown) => logger?.warn('segment count refresh failed', { orgId, segmentIds: ids, error }))
        .finally(() => {
          for (const id of ids) running.delete(id);
        });
    },
  };
}

export type SegmentCountRefresher = ReturnType<typeof createSegmentCountRefresher>;
