/**
 * Segment membership rules (the spec names `type` without its values):
 * - `tag`: every contact of the workspace carrying at least one of the segment's tags;
 * - `all`: every contact of the workspace;
 * - `static`: the contacts added to it through the API (segment_members), until removed.
 * Membership ignores contact status (delivery skips unsubscribed, bounced, complained and
 * suppressed contacts at send time), and tags match exactly, case included, as contacts
 * store them.
 */
export const SEGMENT_TYPES = ['tag', 'all', 'static'] as const;
export type SegmentType = (typeof SEGMENT_TYPES)[number];

/** The type a segment gets from its tags: `tag` when it has any, else `all`. */
export function segmentTypeFor(tags: readonly string[]): SegmentType {
  return tags.length > 0 ? 'tag' : 'all';
}

/** Tags as stored: trimmed by validation, duplicates dropped, first occurrence's order kept. */
export function normalizeSegmentTags(tags: readonly string[]): string[] {
  return [...new Set(tags)];
}

/** Bounds of a static segment's membership (Herald's). */
export const MEMBERSHIP_LIMITS = { perRequest: 1_000, membersMax: 1_000_000 } as const;
