/**
 * Message streams (Herald extension): GET /streams, POST /streams, GET, PATCH and DELETE
 * /streams/{name}. Every email belongs to one (`transactional` by default, `broadcast` for
 * broadcasts and automations, or a custom stream the send names); a stream scopes
 * unsubscribes and manual suppressions, has an optional daily budget, filters metrics and
 * webhook endpoints. Scopes streams:read and streams:write (Herald's own, docs/decisions.md).
 */
import * as v from 'valibot';
import { defineRoute } from '../../http/route.ts';
import { CreateStreamBody, DeletedStreamResponse, StreamParams, StreamResponse, UpdateStreamBody } from './streams.schemas.ts';
import { serializeStream } from './streams.serializer.ts';
import type { StreamsService } from './streams.service.ts';

const TAG = 'Streams';

export function createStreamsRoutes(deps: { streams: StreamsService }) {
  return [
    defineRoute({
      operationId: 'listStreams',
      method: 'GET',
      path: '/streams',
      summary: 'List message streams',
      description:
        'The built-in `transactional` and `broadcast` streams, then the custom ones by name, each with its budget and what it used today. Not paginated.',
      tag: TAG,
      scope: 'streams:read',
      extension: true,
      response: { status: 200, description: 'Every stream of the workspace', schema: v.array(StreamResponse) },
      handle: async ({ caller }) => ({ status: 200, data: (await deps.streams.listStreams(caller.orgId)).map(serializeStream) }),
    }),
    defineRoute({
      operationId: 'createStream',
      method: 'POST',
      path: '/streams',
      summary: 'Create a custom message stream',
      description:
        'A stream of kind `transactional` is claimed ahead of broadcast mail and is not blocked by broadcast unsubscribes; one of kind `broadcast` is mail sent to many. 409 conflict (details.reason STREAM_EXISTS) when the name is taken.',
      tag: TAG,
      scope: 'streams:write',
      extension: true,
      body: CreateStreamBody,
      errors: ['invalid_request', 'conflict', 'idempotency_conflict'],
      response: { status: 201, description: 'The stream', schema: StreamResponse },
      handle: async ({ caller, body }) => ({ status: 201, data: serializeStream(await deps.streams.createStream(caller.orgId, body)) }),
    }),
    defineRoute({
      operationId: 'getStream',
      method: 'GET',
      path: '/streams/:name',
      summary: 'Retrieve a message stream',
      tag: TAG,
      scope: 'streams:read',
      extension: true,
      params: StreamParams,
      errors: ['invalid_request', 'not_found'],
      response: { status: 200, description: 'The stream', schema: StreamResponse },
      handle: async ({ caller, params }) => ({
        status: 200,
        data: serializeStream(await deps.streams.getStream(caller.orgId, params.name)),
      }),
    }),
    defineRoute({
      operationId: 'updateStream',
      method: 'PATCH',
      path: '/streams/:name',
      summary: "Change a stream's description or daily budget",
      description:
        'Built-in streams too. `daily_cap` null removes the budget; past it, sends in the stream are refused with 429 rate_limited (details.reason STREAM_BUDGET_REACHED) until the next UTC day.',
      tag: TAG,
      scope: 'streams:write',
      extension: true,
      params: StreamParams,
      body: UpdateStreamBody,
      errors: ['invalid_request', 'not_found', 'idempotency_conflict'],
      response: { status: 200, description: 'The stream', schema: StreamResponse },
      handle: async ({ caller, params, body }) => ({
        status: 200,
        data: serializeStream(await deps.streams.updateStream(caller.orgId, params.name, body)),
      }),
    }),
    defineRoute({
      operationId: 'deleteStream',
      method: 'DELETE',
      path: '/streams/:name',
      summary: 'Delete a custom message stream',
      description:
        'Later sends naming it are refused (422); emails already accepted keep its name. 409 conflict (details.reason STREAM_BUILT_IN) for a built-in stream.',
      tag: TAG,
      scope: 'streams:write',
      extension: true,
      params: StreamParams,
      errors: ['invalid_request', 'not_found', 'conflict', 'idempotency_conflict'],
      response: { status: 200, description: 'The stream was deleted', schema: DeletedStreamResponse },
      handle: async ({ caller, params }) => {
        await deps.streams.deleteStream(caller.orgId, params.name);
        return { status: 200, data: { name: params.name, deleted: true } };
      },
    }),
  ];
}
