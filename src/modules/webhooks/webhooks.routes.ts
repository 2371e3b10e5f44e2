import { KIB } from '../../http/body-limits.ts';
import type { CursorCodec } from '../../http/cursor.ts';
import { listResult, type PageRequest } from '../../http/paging.ts';
import { defineRoute } from '../../http/route.ts';
import type { StoredResponse } from '../idempotency/idempotency.types.ts';
import { IdParams, PageQuery } from '../../http/schemas.ts';
import type { DeliveriesService } from './deliveries.service.ts';
import {
  RotateSecretBody,
  RotatedWebhookResponse,
  CreatedWebhookResponse,
  CreateWebhookBody,
  DeletedWebhookResponse,
  ListDeliveriesQuery,
  UpdateWebhookBody,
  WebhookDeliveryResponse,
  WebhookResponse,
} from './webhooks.schemas.ts';
import { serializeCreatedWebhook, serializeDelivery, serializeRotatedWebhook, serializeWebhook } from './webhooks.serializer.ts';
import type { WebhooksService } from './webhooks.service.ts';

const WEBHOOKS_LIST = 'webhooks';
const DELIVERIES_LIST = 'webhook-deliveries';

/** name 200 + url 2048 + description 500 + 100 event names, even \u-escaped (6 bytes each): under 48 KB. */
const WEBHOOK_BODY_LIMIT = 64 * KIB;

/**
 * GET/POST /webhooks, GET /webhooks/deliveries, POST /webhooks/deliveries/{id}/replay, and
 * Herald's GET/PATCH/DELETE /webhooks/{id} (after /webhooks/deliveries, which they would shadow).
 * The signing secret is in exactly one response, the 201 of its creation (an Idempotency-Key
 * replay of that same request answers it again from a sealed copy, `sealedSecret`). The
 * deliveries themselves are made by the delivery engine (workflows/, activities/).
 */
export function createWebhooksRoutes(deps: {
  webhooks: WebhooksService;
  deliveries: DeliveriesService;
  cursors: CursorCodec;
  sealedSecret: StoredResponse;
}) {
  return [
    defineRoute({
      operationId: 'listWebhooks',
      method: 'GET',
      path: '/webhooks',
      summary: 'List webhook endpoints, newest first',
      description: "Signing secrets are never listed: an endpoint's secret is shown once, when it is created.",
      tag: 'Webhooks',
      scope: 'webhooks:read',
      query: PageQuery,
      response: { status: 200, description: 'A page of webhook endpoints', schema: WebhookResponse, list: true },
      handle: ({ caller, query }) =>
        listResult(
          { cursors: deps.cursors, list: WEBHOOKS_LIST, caller, query },
          (page) => deps.webhooks.listWebhooks(caller.orgId, page),
          serializeWebhook,
        ),
    }),
    defineRoute({
      operationId: 'createWebhook',
      method: 'POST',
      path: '/webhooks',
      summary: 'Register a webhook endpoint',
      description:
        'Returns the endpoint and its signing secret (`whsec_…`), shown this once. `events` lists event types of the ' +
        'catalog (/docs/events); `*` subscribes to every type, including types added later. Live keys may register ' +
        'only https URLs; test keys may also use http. 503 when secret encryption is not configured.',
      tag: 'Webhooks',
      scope: 'webhooks:write',
      body: CreateWebhookBody,
      bodyLimit: WEBHOOK_BODY_LIMIT,
      storedResponse: deps.sealedSecret,
      response: { status: 201, description: 'The endpoint, with its one-time signing secret', schema: CreatedWebhookResponse },
      errors: ['invalid_request', 'service_unavailable'],
      async handle({ caller, body }) {
        const created = await deps.webhooks.createWebhook(caller.orgId, caller.keyMode, body);
        return { status: 201, data: serializeCreatedWebhook(created) };
      },
    }),
    defineRoute({
      operationId: 'listWebhookDeliveries',
      method: 'GET',
      path: '/webhooks/deliveries',
      summary: 'List webhook deliveries (the delivery log), newest first',
      description:
        "Filters: `webhook_id` (an id that is not one of the workspace's endpoints matches nothing) and `status`. " +
        'Each delivery carries its most recent attempts (up to 50, oldest first, across replay series).',
      tag: 'Webhooks',
      scope: 'webhooks:read',
      query: ListDeliveriesQuery,
      response: { status: 200, description: 'A page of deliveries', schema: WebhookDeliveryResponse, list: true },
      handle: ({ caller, query }) =>
        listResult(
          {
            cursors: deps.cursors,
            list: DELIVERIES_LIST,
            caller,
            query,
            position: ({ delivery }) => ({ sortValue: delivery.createdAt, id: delivery.id }),
          },
          (page: PageRequest) => deps.deliveries.listDeliveries(caller.orgId, page, { webhookId: query.webhook_id, status: query.status }),
          (item) => serializeDelivery(item.delivery, item.attempts),
        ),
    }),
    defineRoute({
      operationId: 'replayWebhookDelivery',
      method: 'POST',
      path: '/webhooks/deliveries/:id/replay',
      summary: 'Queue a replay of a delivery',
      description:
        'Same delivery id and event id (receivers dedupe on them); the delivery goes back to `queued` and a new ' +
        'attempt series starts. Only a delivery that is delivered, failed or exhausted can be replayed; one still ' +
        'queued or delivering, or whose endpoint is disabled or deleted, is 409 (`details.reason` ENDPOINT_DISABLED, ' +
        'ENDPOINT_DELETED); re-enable a disabled endpoint with PATCH /webhooks/{id} first.',
      tag: 'Webhooks',
      scope: 'webhooks:admin',
      params: IdParams,
      response: { status: 202, description: 'The delivery, queued again', schema: WebhookDeliveryResponse },
      errors: ['invalid_request', 'not_found', 'conflict'],
      async handle({ caller, params }) {
        const replayed = await deps.deliveries.replayDelivery(caller.orgId, params.id);
        return { status: 202, data: serializeDelivery(replayed.delivery, replayed.attempts) };
      },
    }),
    defineRoute({
      operationId: 'getWebhook',
      method: 'GET',
      path: '/webhooks/:id',
      summary: 'Retrieve a webhook endpoint',
      description: 'The endpoint record, without its signing secret (shown only when the endpoint was created).',
      tag: 'Webhooks',
      scope: 'webhooks:read',
      extension: true,
      params: IdParams,
      response: { status: 200, description: 'The webhook endpoint', schema: WebhookResponse },
      errors: ['invalid_request', 'not_found'],
      async handle({ caller, params }) {
        return { status: 200, data: serializeWebhook(await deps.webhooks.getWebhook(caller.orgId, params.id)) };
      },
    }),
    defineRoute({
      operationId: 'updateWebhook',
      method: 'PATCH',
      path: '/webhooks/:id',
      summary: 'Update a webhook endpoint (name, url, events, description, enabled)',
      description:
        'Any of the creation fields, with the same rules; at least one. A new `url` must be https when the key, or the ' +
        'key that registered the endpoint, is live. `enabled: true` re-enables an endpoint Herald disabled (after a 410 ' +
        'Gone) and clears `disabled_reason`; `enabled: false` disables it with `disabled_reason` "disabled over the API". ' +
        'Deliveries already waiting for a retry read the endpoint again at their next attempt: to a disabled endpoint ' +
        'they end `exhausted` without a request. The signing secret does not change.',
      tag: 'Webhooks',
      scope: 'webhooks:write',
      extension: true,
      params: IdParams,
      body: UpdateWebhookBody,
      bodyLimit: WEBHOOK_BODY_LIMIT,
      response: { status: 200, description: 'The updated endpoint', schema: WebhookResponse },
      errors: ['invalid_request', 'not_found'],
      async handle({ caller, params, body }) {
        return { status: 200, data: serializeWebhook(await deps.webhooks.updateWebhook(caller.orgId, caller.keyMode, params.id, body)) };
      },
    }),
    defineRoute({
      operationId: 'rotateWebhookSecret',
      method: 'POST',
      path: '/webhooks/:id/rotate-secret',
      summary: "Rotate a webhook endpoint's signing secret",
      description:
        'Returns the endpoint with its new signing secret, shown this once. For `overlap_seconds` (default 24 h, at most ' +
        '7 days, 0 for none) every attempt also carries a signature made with the replaced secret: `Herald-Signature: ' +
        't=…,v1=<new>,v1=<previous>` and `webhook-signature: v1,<new> v1,<previous>`, so a receiver verifying with ' +
        'either secret accepts it while it switches. Rotating again within the overlap drops the older secret at once ' +
        "(at most two sign). Takes effect for attempts starting after the endpoint's drain next reads it (every 5 s). " +
        '503 when secret encryption is not configured.',
      tag: 'Webhooks',
      scope: 'webhooks:admin',
      extension: true,
      params: IdParams,
      body: RotateSecretBody,
      storedResponse: deps.sealedSecret,
      response: { status: 200, description: 'The endpoint, with its new one-time signing secret', schema: RotatedWebhookResponse },
      errors: ['invalid_request', 'not_found', 'service_unavailable'],
      async handle({ caller, params, body }) {
        return {
          status: 200,
          data: serializeRotatedWebhook(await deps.webhooks.rotateSecret(caller.orgId, params.id, body.overlap_seconds)),
        };
      },
    }),
    defineRoute({
      operationId: 'deleteWebhook',
      method: 'DELETE',
      path: '/webhooks/:id',
      summary: 'Delete a webhook endpoint',
      description:
        'The endpoint stops receiving events at once. Its deliveries stay in the delivery log (filter `webhook_id`); ' +
        'those still queued or waiting for a retry end `exhausted` without a request, and none can be replayed.',
      tag: 'Webhooks',
      scope: 'webhooks:admin',
      extension: true,
      params: IdParams,
      response: { status: 200, description: "The deleted endpoint's id", schema: DeletedWebhookResponse },
      errors: ['invalid_request', 'not_found'],
      async handle({ caller, params }) {
        return { status: 200, data: await deps.webhooks.deleteWebhook(caller.orgId, params.id) };
      },
    }),
  ];
}
