/**
 * Segments of one workspace: list, read, create and edit, and the count of a rule before it is saved. A segment's members are computed live from its
 * type and tags (see segments.fns.ts); `contactCount` comes from one counting statement per
 * page (segments.repo.ts), never one query per segment. Pages that list many segments read the
 * stored counts instead (`counts: 'stored'`, segment-counts.ts).
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../../logger.ts';
import { Segment } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import { normalizeSegmentTags, segmentTypeFor } from './segments.fns.ts';
import { createSegmentCountRefresher } from './segment-counts.ts';
import { countContactsWithTags, countSegmentMembers, segmentNotFound } from './segments.repo.ts';
import type { CreateSegmentInput } from './segments.schemas.ts';

/** A page of segments with the live member count of each. */
export interface SegmentPage extends KeysetPage<Segment> {
  contactCounts: ReadonlyMap<string, number>;
}

/** Segments of one workspace at a time; every query runs through a workspace-scoped EntityManager. */
export function createSegmentsService({ orm, logger }: { orm: MikroORM; logger?: Pick<Logger, 'warn'> | undefined }) {
  const storedCounts = createSegmentCountRefresher({ orm, logger });
  return {
    /**
     * Newest first, keyset-paginated on (createdAt, id), with member counts in one extra query
     * (none with `counts: false`, for a page that shows only the segments' names; none with
     * `counts: 'stored'`, for a page that shows each segment's stored count: the dynamic ones
     * whose count is stale are recounted after the call, see segment-counts.ts).
     */
    async listSegments(
      orgId: string,
      page: { limit: number; after?: KeysetPosition | undefined },
      options: { countUpTo?: number; counts?: boolean | 'stored' } = {},
    ): Promise<SegmentPage> {
      const em = scopeToOrg(orm.em, orgId);
      const result = await findKeysetPage(em, Segment, {}, page);
      if (options.counts === 'stored') storedCounts.refreshStale(orgId, result.items);
      const ids = options.counts === false || options.counts === 'stored' ? [] : result.items.map((segment) => segment.id);
      const contactCounts = await countSegmentMembers(em, orgId, ids, options.countUpTo);
      return { ...result, contactCounts };
    },

    /** Creates a segment; its type follows from its tags unless it is static. Returns it with its member count. */
    async createSegment(orgId: string, input: CreateSegmentInput): Promise<{ segment: Segment; contactCount: number }> {
      const em = scopeToOrg(orm.em, orgId);
      const tags = normalizeSegmentTags(input.tags);
      if (input.type === 'static' && tags.length > 0) {
        throw new AppError(
          'invalid_request',
          'Invalid body.tags: a static segment has no tags (its members are added with POST /segments/{id}/contacts).',
          {
            fields: [{ path: 'tags', location: 'body', type: 'static_segment', message: 'must be empty for a static segment' }],
          },
        );
      }
      const type = input.type ?? segmentTypeFor(tags);
      const segment = em.create(Segment, {
        orgId,
        name: input.name,
        description: input.description,
        type,
        tags,
        memberCount: type === 'static' ? 0 : null,
      });
      await em.flush();
      if (type === 'static') return { segment, contactCount: 0 };
      const counts = await countSegmentMembers(em, orgId, [segment.id]);
      const contactCount = counts.get(segment.id) ?? 0;
      em.assign(segment, { memberCount: contactCount, countedAt: new Date() });
      await em.flush();
      return { segment, contactCount };
    },

    /** One segment with its live member count; 404 for a segment of no one or of another workspace. */
    async getSegment(orgId: string, id: string, options: { countUpTo?: number } = {}): Promise<{ segment: Segment; contactCount: number }> {
      const em = scopeToOrg(orm.em, orgId);
      const segment = await em.findOne(Segment, { id: id.toLowerCase() });
      if (!segment) throw segmentNotFound(id);
      const counts = await countSegmentMembers(em, orgId, [segment.id], options.countUpTo);
      return { segment, contactCount: counts.get(segment.id) ?? 0 };
    },

    /**
     * Changes a segment's name, description and, unless it is static, its tags (its type follows
     * them: `tag` with tags, `all` without).
     */
    async updateSegment(
      orgId: string,
      id: string,
      input: { name: string; description: string; tags: readonly string[] },
    ): Promise<Segment> {
      const em = scopeToOrg(orm.em, orgId);
      const segment = await em.findOne(Segment, { id: id.toLowerCase() });
      if (!segment) throw segmentNotFound(id);
      const tags = normalizeSegmentTags(input.tags);
      if (segment.type === 'static' && tags.length > 0) {
        throw new AppError('invalid_request', 'A static segment has no tags: add and remove its members instead.', {
          fields: [{ path: 'tags', location: 'body', type: 'static_segment', message: 'must be empty for a static segment' }],
        });
      }
      const ruleChanged =
        segment.type !== 'static' && (segment.type !== segmentTypeFor(tags) || segment.tags.join('\n') !== tags.join('\n'));
      em.assign(segment, {
        name: input.name,
        description: input.description,
        ...(segment.type === 'static' ? {} : { tags, type: segmentTypeFor(tags) }),
        // A new rule's stored count is unknown until recounted (the next page that lists it).
        ...(ruleChanged ? { memberCount: null, countedAt: null } : {}),
      });
      await em.flush();
      return segment;
    },

    /** Counts the dynamic segments' members now and stores the counts (what a stale list starts in the background). */
    refreshStoredCounts(orgId: string, segmentIds: readonly string[]): Promise<void> {
      return storedCounts.refresh(orgId, segmentIds);
    },

    /** How many contacts (up to `cap`) a dynamic rule would hold now: those carrying one of `tags`, or every contact without tags. */
    async countMatching(orgId: string, tags: readonly string[], cap: number): Promise<number> {
      return countContactsWithTags(scopeToOrg(orm.em, orgId), orgId, normalizeSegmentTags(tags), cap);
    },
  };
}

export type SegmentsService = ReturnType<typeof createSegmentsService>;
