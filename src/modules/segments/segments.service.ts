/**
 * Segments of one workspace: list and create. A segment's members are computed live from its
 * type and tags (see segments.fns.ts); `contactCount` comes from one counting statement per
 * page (segments.repo.ts), never one query per segment.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { Segment } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import { normalizeSegmentTags, segmentTypeFor } from './segments.fns.ts';
import { countSegmentMembers } from './segments.repo.ts';
import type { CreateSegmentInput } from './segments.schemas.ts';

/** A page of segments with the live member count of each. */
export interface SegmentPage extends KeysetPage<Segment> {
  contactCounts: ReadonlyMap<string, number>;
}

/** Segments of one workspace at a time; every query runs through a workspace-scoped EntityManager. */
export function createSegmentsService({ orm }: { orm: MikroORM }) {
  return {
    /** Newest first, keyset-paginated on (createdAt, id), with member counts in one extra query. */
    async listSegments(orgId: string, page: { limit: number; after?: KeysetPosition | undefined }): Promise<SegmentPage> {
      const em = scopeToOrg(orm.em, orgId);
      const result = await findKeysetPage(em, Segment, {}, page);
      const contactCounts = await countSegmentMembers(
        em,
        orgId,
        result.items.map((segment) => segment.id),
      );
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
      const segment = em.create(Segment, {
        orgId,
        name: input.name,
        description: input.description,
        type: input.type ?? segmentTypeFor(tags),
        tags,
      });
      await em.flush();
      const counts = await countSegmentMembers(em, orgId, [segment.id]);
      return { segment, contactCount: counts.get(segment.id) ?? 0 };
    },
  };
}

export type SegmentsService = ReturnType<typeof createSegmentsService>;
