import type { CursorCodec } from '../../http/cursor.ts';
import { listResult } from '../../http/paging.ts';
import { defineRoute } from '../../http/route.ts';
import { IdParams, PageQuery } from '../../http/schemas.ts';
import type { BroadcastsService, BroadcastView } from './broadcasts.service.ts';
import {
  BroadcastResponse,
  CreateBroadcastBody,
  DeletedBroadcastResponse,
  LaunchBroadcastBody,
  UpdateBroadcastBody,
} from './broadcasts.schemas.ts';
import { serializeBroadcast } from './broadcasts.serializer.ts';

const LIST = 'broadcasts';

const STREAM_NOTE =
  'Herald extension: `stream` names the message stream of its messages (default `broadcast`; a custom stream of the broadcast kind, GET /streams), ' +
  'whose suppression scope and daily budget they follow; 422 details.reason UNKNOWN_STREAM for a stream the workspace does not have, STREAM_NOT_BROADCAST for a transactional one.';

const view = ({ broadcast, counts }: BroadcastView) => serializeBroadcast(broadcast, counts);

const STATES =
  "States: draft → scheduled (launched for a later time) → sending (the audience, the segments' active and unsuppressed contacts as of the send time, " +
  'is queued on the sending domain) → sent (every message left the queue); or cancelled (by the caller; messages not yet handed off are not sent) ' +
  'or failed (by Herald; the broadcast.failed event says why). `metrics` counts the messages queued (`recipients`) and their events.';

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
          (broadcast, page) => serializeBroadcast(broadcast, page.counts.get(broadcast.id)),
        ),
    }),
    defineRoute({
      operationId: 'getBroadcast',
      method: 'GET',
      path: '/outbox/broadcasts/:id',
      summary: 'Get a broadcast with its send status and live metrics',
      description: STATES,
      tag: 'Outbox',
      scope: 'outbox.broadcasts:read',
      params: IdParams,
      response: { status: 200, description: 'The broadcast', schema: BroadcastResponse },
      errors: ['not_found'],
      async handle({ caller, params }) {
        return { status: 200, data: view(await deps.broadcasts.getBroadcast(caller.orgId, params.id)) };
      },
    }),
    defineRoute({
      operationId: 'sendBroadcast',
      method: 'POST',
      path: '/outbox/broadcasts/:id/send',
      summary: 'Launch a broadcast draft, now or at scheduled_at',
      description:
        `${STATES} The body's scheduled_at (else the draft's) must lie in the next 30 days; null sends now. ` +
        '400 details.reason EMPTY_BODY, TEMPLATE_INVALID, UNKNOWN_SEGMENT, SCHEDULE_OUT_OF_RANGE; 403 DOMAIN_NOT_FOUND, DOMAIN_NOT_READY, ' +
        'DOMAIN_ATTENTION, DOMAIN_REPUTATION_RECOVERY; 409 BROADCAST_NOT_DRAFT; 503 ENCRYPTION_KEY_MISSING.',
      tag: 'Outbox',
      scope: 'outbox.broadcasts:send',
      params: IdParams,
      body: LaunchBroadcastBody,
      response: { status: 202, description: 'The broadcast, scheduled or sending', schema: BroadcastResponse },
      errors: [
        'invalid_request',
        'forbidden',
        'not_found',
        'conflict',
        'idempotency_conflict',
        'unprocessable_entity',
        'service_unavailable',
      ],
      async handle({ caller, params, body }) {
        return { status: 202, data: view(await deps.broadcasts.launchBroadcast(caller.orgId, params.id, body, caller)) };
      },
    }),
    defineRoute({
      operationId: 'cancelBroadcast',
      method: 'POST',
      path: '/outbox/broadcasts/:id/cancel',
      summary: 'Cancel a scheduled or sending broadcast',
      description: `${STATES} Messages already handed to the relay are not recalled. 409 BROADCAST_NOT_CANCELLABLE for a draft or a finished broadcast.`,
      tag: 'Outbox',
      scope: 'outbox.broadcasts:send',
      params: IdParams,
      response: { status: 200, description: 'The cancelled broadcast', schema: BroadcastResponse },
      errors: ['not_found', 'conflict', 'idempotency_conflict'],
      async handle({ caller, params }) {
        return { status: 200, data: view(await deps.broadcasts.cancelBroadcast(caller.orgId, params.id)) };
      },
    }),
    defineRoute({
      operationId: 'createBroadcast',
      method: 'POST',
      path: '/outbox/broadcasts',
      summary: 'Create a broadcast draft',
      description:
        'Segments must belong to the workspace and the from address to one of its domains (400 invalid_request, ' +
        'details.reason UNKNOWN_SEGMENT or DOMAIN_NOT_FOUND); scheduled_at must be in the future and at most 30 days ahead. ' +
        `${STREAM_NOTE}`,
      tag: 'Outbox',
      scope: 'outbox.broadcasts:write',
      body: CreateBroadcastBody,
      response: { status: 201, description: 'The broadcast draft', schema: BroadcastResponse },
      errors: ['invalid_request', 'conflict', 'idempotency_conflict', 'unprocessable_entity'],
      async handle({ caller, body }) {
        return { status: 201, data: serializeBroadcast(await deps.broadcasts.createBroadcast(caller.orgId, body)) };
      },
    }),
    defineRoute({
      operationId: 'updateBroadcast',
      method: 'PATCH',
      path: '/outbox/broadcasts/:id',
      summary: 'Change a broadcast draft',
      description:
        'The fields given, checked as on create; reply_to and scheduled_at null clear them. ' +
        `${STREAM_NOTE} 409 conflict (details.reason BROADCAST_NOT_DRAFT) once the broadcast is launched.`,
      tag: 'Outbox',
      scope: 'outbox.broadcasts:write',
      extension: true,
      params: IdParams,
      body: UpdateBroadcastBody,
      response: { status: 200, description: 'The changed draft', schema: BroadcastResponse },
      errors: ['invalid_request', 'not_found', 'conflict', 'idempotency_conflict', 'unprocessable_entity'],
      async handle({ caller, params, body }) {
        return { status: 200, data: serializeBroadcast(await deps.broadcasts.updateBroadcast(caller.orgId, params.id, body)) };
      },
    }),
    defineRoute({
      operationId: 'deleteBroadcast',
      method: 'DELETE',
      path: '/outbox/broadcasts/:id',
      summary: 'Delete a broadcast draft',
      description:
        '409 conflict (details.reason BROADCAST_NOT_DRAFT) once the broadcast is launched: its messages and counters refer to it.',
      tag: 'Outbox',
      scope: 'outbox.broadcasts:write',
      extension: true,
      params: IdParams,
      response: { status: 200, description: 'The draft was deleted', schema: DeletedBroadcastResponse },
      errors: ['not_found', 'conflict', 'idempotency_conflict'],
      async handle({ caller, params }) {
        return { status: 200, data: await deps.broadcasts.deleteBroadcast(caller.orgId, params.id) };
      },
    }),
  ];
}
