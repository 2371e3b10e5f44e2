/**
 * GET /segments and POST /segments. Responses are camelCase (spec). `type` is derived, not
 * sent: `tag` (contacts carrying at least one of the tags, any status, tags case-sensitive)
 * or `all` (every contact of the workspace, when no tags are given). `contactCount` is the
 * live member count at the time of the request.
 */
import type { CursorCodec } from '../../http/cursor.ts';
import { listJsonResult, listResult } from '../../http/paging.ts';
import { KIB } from '../../http/body-limits.ts';
import { defineRoute } from '../../http/route.ts';
import { IdParams, PageQuery } from '../../http/schemas.ts';
import { ContactResponse } from '../contacts/contacts.schemas.ts';
import type { MembershipService } from './membership.service.ts';
import { MEMBERSHIP_LIMITS } from './segments.fns.ts';
import {
  AddMembersResponse,
  CreateSegmentBody,
  MembershipBody,
  RemoveMembersResponse,
  SegmentResponse,
  type MembershipInput,
} from './segments.schemas.ts';
import { serializeSegment } from './segments.serializer.ts';
import type { SegmentsService } from './segments.service.ts';

const LIST = 'segments';

const MEMBERSHIP_NOTE =
  '`type` is derived from `tags`: `tag` when tags are given (members: contacts carrying at least one ' +
  'of the tags, exact case, whatever their status), `all` when none are (every contact of the workspace). ' +
  'Herald extension: `type: "static"` (no tags) creates a segment whose members are added and removed with ' +
  '/segments/{id}/contacts. `contactCount` is computed live.';

const CHANGE_NOTE =
  `Contacts by \`contact_ids\` and/or \`emails\` (normalised as contacts store them), ${MEMBERSHIP_LIMITS.perRequest} in all at most. ` +
  'Ids and addresses that name no contact of the workspace are listed in `notFound`; the rest is applied. ' +
  `409 SEGMENT_NOT_STATIC for a tag or all segment; 409 SEGMENT_FULL past ${MEMBERSHIP_LIMITS.membersMax} members (nothing is added).`;

/** A membership change of a static segment (add or remove): the same request, its own answer. */
function membershipRoute(route: {
  operationId: string;
  path: string;
  summary: string;
  description: string;
  schema: typeof AddMembersResponse | typeof RemoveMembersResponse;
  handle: (orgId: string, segmentId: string, body: MembershipInput) => Promise<unknown>;
}) {
  return defineRoute({
    operationId: route.operationId,
    method: 'POST',
    path: route.path,
    summary: route.summary,
    description: route.description,
    tag: 'Segments',
    scope: 'segments:write',
    extension: true,
    params: IdParams,
    // The default limit (1 MiB): 1,000 addresses of the longest kind (320 characters) take 330 KB.
    body: MembershipBody,
    response: { status: 200, description: 'What changed', schema: route.schema },
    errors: ['invalid_request', 'not_found', 'conflict'],
    handle: async ({ caller, params, body }) => ({ status: 200, data: await route.handle(caller.orgId, params.id, body) }),
  });
}

/** The segment routes, built on the segments service. */
export function createSegmentsRoutes(deps: { segments: SegmentsService; membership: MembershipService; cursors: CursorCodec }) {
  return [
    defineRoute({
      operationId: 'listSegmentContacts',
      method: 'GET',
      path: '/segments/:id/contacts',
      summary: 'List the contacts of a segment, newest first',
      description: 'The members now, whatever the segment type, in the shape and order of GET /contacts.',
      tag: 'Segments',
      scope: 'segments:read',
      extension: true,
      params: IdParams,
      query: PageQuery,
      response: { status: 200, description: 'A page of contacts', schema: ContactResponse, list: true },
      errors: ['invalid_request', 'not_found'],
      handle: ({ caller, params, query }) =>
        listJsonResult({ cursors: deps.cursors, list: `${LIST}:${params.id.toLowerCase()}:contacts`, caller, query }, (page) =>
          deps.membership.listMembers(caller.orgId, params.id, page),
        ),
    }),
    membershipRoute({
      operationId: 'addSegmentContacts',
      path: '/segments/:id/contacts',
      summary: 'Add contacts to a static segment',
      description: `${CHANGE_NOTE} Contacts already in it count as \`alreadyMembers\`.`,
      schema: AddMembersResponse,
      handle: async (orgId, id, body) => {
        const change = await deps.membership.addMembers(orgId, id, body);
        return {
          segmentId: change.segmentId,
          added: change.changed,
          alreadyMembers: change.unchanged,
          notFound: change.notFound,
          contactCount: change.contactCount,
        };
      },
    }),
    membershipRoute({
      operationId: 'removeSegmentContacts',
      path: '/segments/:id/contacts/remove',
      summary: 'Remove contacts from a static segment',
      description: `${CHANGE_NOTE} Contacts that were not in it count as \`notMembers\`. The contacts themselves are not changed.`,
      schema: RemoveMembersResponse,
      handle: async (orgId, id, body) => {
        const change = await deps.membership.removeMembers(orgId, id, body);
        return {
          segmentId: change.segmentId,
          removed: change.changed,
          notMembers: change.unchanged,
          notFound: change.notFound,
          contactCount: change.contactCount,
        };
      },
    }),
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
