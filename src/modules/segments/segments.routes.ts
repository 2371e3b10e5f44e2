/**
 * GET /segments and POST /segments. Responses are camelCase (spec). `type` is derived, not
 * sent: `tag` (contacts carrying at least one of the tags, any status, tags case-sensitive)
 * or `all` (every contact of the workspace, when no tags are given). `contactCount` is the
 * live member count at the time of the request.
 */
import type { CursorCodec } from '../../http/cursor.ts';
import { listResult } from '../../http/paging.ts';
import { KIB } from '../../http/body-limits.ts';
import { defineRoute } from '../../http/route.ts';
import { PageQuery } from '../../http/schemas.ts';
import { CreateSegmentBody, SegmentResponse } from './segments.schemas.ts';
import { serializeSegment } from './segments.serializer.ts';
import type { SegmentsService } from './segments.service.ts';

const LIST = 'segments';

const MEMBERSHIP_NOTE =
  '`type` is derived from `tags`: `tag` when tags are given (members: contacts carrying at least one ' +
  'of the tags, exact case, whatever their status), `all` when none are (every contact of the workspace). ' +
  '`contactCount` is computed live.';

/** The segment routes, built on the segments service. */
export function createSegmentsRoutes(deps: { segments: SegmentsService; cursors: CursorCodec }) {
  return [
    defineRoute({
      operationId: 'listSegments',
      method: 'GET',
      path: '/segments',
      summary: 'List segments, newest first, with live member counts',
      description: MEMBERSHIP_NOTE,
      tag: 'Segments',
      scope: 'segments:read',
      query: PageQuery,
      response: { status: 200, description: 'A page of segments', schema: SegmentResponse, list: true },
      handle: ({ caller, query }) =>
        listResult(
          { cursors: deps.cursors, list: LIST, caller, query },
          (page) => deps.segments.listSegments(caller.orgId, page),
          (segment, page) => serializeSegment(segment, page.contactCounts.get(segment.id) ?? 0),
        ),
    }),
    defineRoute({
      operationId: 'createSegment',
      method: 'POST',
      path: '/segments',
      summary: 'Create a segment',
      description: MEMBERSHIP_NOTE,
      tag: 'Segments',
      scope: 'segments:write',
      body: CreateSegmentBody,
      // name 120 + description 500 + 100 tags of 100 characters, even \u-escaped: under 64 KiB.
      bodyLimit: 64 * KIB,
      response: { status: 201, description: 'The segment', schema: SegmentResponse },
      errors: ['invalid_request', 'idempotency_conflict'],
      async handle({ caller, body }) {
        const { segment, contactCount } = await deps.segments.createSegment(caller.orgId, body);
        return { status: 201, data: serializeSegment(segment, contactCount) };
      },
    }),
  ];
}
