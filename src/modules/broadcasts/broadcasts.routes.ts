import type { CursorCodec } from '../../http/cursor.ts';
import { listResult } from '../../http/paging.ts';
import { defineRoute } from '../../http/route.ts';
import { PageQuery } from '../../http/schemas.ts';
import type { BroadcastsService } from './broadcasts.service.ts';
import { BroadcastResponse, CreateBroadcastBody } from './broadcasts.schemas.ts';
import { serializeBroadcast } from './broadcasts.serializer.ts';

const LIST = 'broadcasts';

/**
 * GET/POST /outbox/broadcasts. A broadcast is created as a draft (status `draft`, zero
 * metrics) to segments of the workspace, from an address on one of its domains; a
 * `scheduled_at` must lie in the next 30 days. Launching a send is a separate operation.
 */
export function createBroadcastsRoutes(deps: { broadcasts: BroadcastsService; cursors: CursorCodec }) {
  return [
    defineRoute({
      operationId: 'listBroadcasts',
      method: 'GET',
      path: '/outbox/broadcasts',
      summary: 'List broadcasts, newest first',
      tag: 'Outbox',
      scope: 'outbox.broadcasts:read',
      query: PageQuery,
      response: { status: 200, description: 'A page of broadcasts', schema: BroadcastResponse, list: true },
      handle: ({ caller, query }) =>
        listResult(
          { cursors: deps.cursors, list: LIST, caller, query },
          (page) => deps.broadcasts.listBroadcasts(caller.orgId, page),
          serializeBroadcast,
        ),
    }),
    defineRoute({
      operationId: 'createBroadcast',
      method: 'POST',
      path: '/outbox/broadcasts',
      summary: 'Create a broadcast draft',
      description:
        'Segments must belong to the workspace and the from address to one of its domains (400 invalid_request, ' +
        'details.reason UNKNOWN_SEGMENT or DOMAIN_NOT_FOUND); scheduled_at must be in the future and at most 30 days ahead.',
      tag: 'Outbox',
      scope: 'outbox.broadcasts:write',
      body: CreateBroadcastBody,
      response: { status: 201, description: 'The broadcast draft', schema: BroadcastResponse },
      errors: ['invalid_request', 'conflict', 'idempotency_conflict'],
      async handle({ caller, body }) {
        return { status: 201, data: serializeBroadcast(await deps.broadcasts.createBroadcast(caller.orgId, body)) };
      },
    }),
  ];
}
