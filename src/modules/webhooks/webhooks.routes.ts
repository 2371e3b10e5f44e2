import type { CursorCodec } from '../../http/cursor.ts';
import { listResult, type PageRequest } from '../../http/paging.ts';
import { defineRoute, type StoredResponse } from '../../http/route.ts';
import { IdParams, PageQuery } from '../../http/schemas.ts';
import type { DeliveriesService } from './deliveries.service.ts';
import {
  CreatedWebhookResponse,
  CreateWebhookBody,
  ListDeliveriesQuery,
  WebhookDeliveryResponse,
  WebhookResponse,
} from './webhooks.schemas.ts';
import { serializeCreatedWebhook, serializeDelivery, serializeWebhook } from './webhooks.serializer.ts';
import type { WebhooksService } from './webhooks.service.ts';

const WEBHOOKS_LIST = 'webhooks';
const DELIVERIES_LIST = 'webhook-deliveries';

/**
 * GET/POST /webhooks, GET /webhooks/deliveries, POST /webhooks/deliveries/{id}/replay.
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
      description: 'Signing secrets are never listed: an endpoint\'s secret is shown once, when it is created.',
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
        'Filters: `webhook_id` (an id that is not one of the workspace\'s endpoints matches nothing) and `status`. ' +
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
        'queued or delivering, or whose endpoint is disabled, is 409.',
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
  ];
}
