import { WEBHOOK_DELIVERY_STATUSES, type WebhookDeliveryStatus, type WebhookEndpoint } from '../../../db/entities/index.ts';
import type { KeysetPosition } from '../../../db/keyset.ts';
import type { AppError } from '../../errors.ts';
import type { ApiServices } from '../../api-composition.ts';
import { orNotFound, isError, type DashboardArea, type DashboardContext, type DashboardKit, form, one } from './dashboard-kit.router.ts';
import { webhooksPage } from './dashboard-webhooks.pages.ts';
import { endpointPage, ROTATION_CHOICES, type EndpointPageModel } from './dashboard-webhook-endpoint.pages.ts';
import { deliveryPage } from './dashboard-webhook-delivery.pages.ts';
import { webhookEditRoutes } from './dashboard-webhook-edits.routes.ts';
import type Router from '@koa/router';
import type { HeraldState } from '../../http/state.ts';

const PAGE_SIZE = 50;
const ID = /^[0-9a-fA-F]{24}$/;

/** A page link's `older` parameter: the last row's created_at (ISO, milliseconds) and id. */
export function olderOf(position: { sortValue: Date; id: string }): string {
  return `${position.sortValue.toISOString()}_${position.id}`;
}

/** The keyset position an `older` parameter names; undefined (the first page) when absent or malformed. */
export function positionOf(older: string | string[] | undefined): KeysetPosition | undefined {
  const match = typeof older === 'string' ? /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)_([0-9a-f]{24})$/.exec(older) : null;
  if (!match) return undefined;
  const sortValue = new Date(match[1]!);
  return Number.isNaN(sortValue.getTime()) ? undefined : { sortValue, id: match[2]! };
}

/** What the dashboard says when a replay is refused (the service's 409 reasons). */
function conflictText(error: AppError): string {
  const reason = error.details?.reason;
  if (reason === 'ENDPOINT_DISABLED') return "Its endpoint is disabled: enable it on the endpoint's page, then replay.";
  if (reason === 'ENDPOINT_DELETED') return 'Its endpoint was deleted: the delivery cannot be replayed.';
  return 'This delivery is still in flight (queued or delivering): replay it once it has finished.';
}

/** The endpoint page and the lookups the webhooks routes share. */
export function webhookPages(services: Pick<ApiServices, 'webhooks' | 'deliveries'>, kit: DashboardKit) {
  const { webhooks, deliveries } = services;
  return {
    /** The endpoint page: the endpoint, one page of its delivery log (filtered), and what happened. */
    async renderEndpoint(ctx: DashboardContext, status: number, endpoint: WebhookEndpoint, extra: Partial<EndpointPageModel> = {}) {
      const signedIn = kit.signedInOf(ctx);
      const wanted = one(ctx.query.status);
      const filter = (WEBHOOK_DELIVERY_STATUSES as readonly string[]).includes(wanted) ? (wanted as WebhookDeliveryStatus) : undefined;
      const after = positionOf(ctx.query.older);
      const page = await deliveries.listDeliveries(signedIn.orgId, { limit: PAGE_SIZE, after }, { webhookId: endpoint.id, status: filter });
      const last = page.items.at(-1)?.delivery;
      kit.send(
        ctx,
        status,
        endpointPage({
          signedIn,
          endpoint,
          deliveries: page.items.map((item) => item.delivery),
          status: filter,
          older: page.hasMore && last ? olderOf({ sortValue: last.createdAt, id: last.id }) : undefined,
          ...extra,
        }),
      );
    },

    /** The workspace's endpoint `id`, or null when it has none. */
    async endpointOf(ctx: DashboardContext, id: string): Promise<WebhookEndpoint | null> {
      if (!ID.test(id)) return null;
      return orNotFound(webhooks.getWebhook(kit.signedInOf(ctx).orgId, id));
    },
  };
}

export type WebhookPages = ReturnType<typeof webhookPages>;

/**
 * The webhooks pages of the dashboard (/dashboard/webhooks): endpoints (list, add, edit,
 * disable and enable, a test event, delete), an endpoint's delivery log with a status filter and
 * its secret rotation, a delivery's attempts and its replay. All through the API's webhooks and
 * deliveries services (tenancy, URL rules, replay rules, sealed secrets).
 */
export function webhooksArea(services: ApiServices): DashboardArea {
  return (router, kit: DashboardKit) => {
    const pages = webhookPages(services, kit);
    listRoutes(router, kit, services);
    deliveryRoutes(router, kit, services);
    // Before /webhooks/:id, which would take `new` for an id.
    webhookEditRoutes(router, kit, services, pages);
    endpointRoutes(router, kit, services, pages);
  };
}

function listRoutes(router: Router<HeraldState>, kit: DashboardKit, { webhooks }: Pick<ApiServices, 'webhooks'>) {
  router.get('/webhooks', kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const page = await webhooks.listWebhooks(signedIn.orgId, { limit: PAGE_SIZE, after: positionOf(ctx.query.older) });
    const last = page.items.at(-1);
    kit.send(
      ctx,
      200,
      webhooksPage({
        signedIn,
        endpoints: page.items,
        older: page.hasMore && last ? olderOf({ sortValue: last.createdAt, id: last.id }) : undefined,
        ...(ctx.query.deleted === '1' ? { notice: 'The endpoint was deleted.' } : {}),
      }),
    );
  });
}

function deliveryRoutes(router: Router<HeraldState>, kit: DashboardKit, services: Pick<ApiServices, 'webhooks' | 'deliveries'>) {
  const { webhooks, deliveries } = services;
  async function renderDelivery(ctx: DashboardContext, status: number, id: string, extra: { error?: string; notice?: string } = {}) {
    const signedIn = kit.signedInOf(ctx);
    let found;
    try {
      found = ID.test(id) ? await deliveries.getDelivery(signedIn.orgId, id) : null;
    } catch (error) {
      if (!isError(error, 'not_found')) throw error;
      found = null;
    }
    if (!found) return kit.notFound(ctx, 'delivery');
    let endpoint: WebhookEndpoint | null = null;
    try {
      endpoint = await webhooks.getWebhook(signedIn.orgId, found.delivery.webhookId);
    } catch (error) {
      if (!isError(error, 'not_found')) throw error;
    }
    // A delivery still on its way reloads itself (like a pending domain) until it has settled.
    if (status === 200 && (found.delivery.status === 'queued' || found.delivery.status === 'delivering')) ctx.set('Refresh', '2');
    kit.send(ctx, status, deliveryPage({ signedIn, delivery: found.delivery, attempts: found.attempts, endpoint, ...extra }));
  }

  router.get('/webhooks/deliveries/:id', kit.requireSession, async (ctx) => {
    await renderDelivery(
      ctx,
      200,
      ctx.params.id ?? '',
      ctx.query.replayed === '1' ? { notice: 'Replay queued: the delivery is sent again with its next drain.' } : {},
    );
  });

  router.post('/webhooks/deliveries/:id/replay', kit.forms, kit.requireSession, async (ctx) => {
    const id = ctx.params.id ?? '';
    if (!ID.test(id)) return kit.notFound(ctx, 'delivery');
    try {
      await deliveries.replayDelivery(kit.signedInOf(ctx).orgId, id);
    } catch (error) {
      if (isError(error, 'not_found')) return kit.notFound(ctx, 'delivery');
      if (isError(error, 'conflict')) return renderDelivery(ctx, 409, id, { error: conflictText(error) });
      throw error;
    }
    ctx.redirect(`/dashboard/webhooks/deliveries/${id.toLowerCase()}?replayed=1`);
    ctx.status = 303;
  });
}

function endpointRoutes(router: Router<HeraldState>, kit: DashboardKit, { webhooks }: Pick<ApiServices, 'webhooks'>, pages: WebhookPages) {
  router.get('/webhooks/:id', kit.requireSession, async (ctx) => {
    const endpoint = await pages.endpointOf(ctx, ctx.params.id ?? '');
    if (!endpoint) return kit.notFound(ctx, 'webhook endpoint');
    const notices: Record<string, string> = {
      created: 'The endpoint was added.',
      saved: 'Your changes were saved.',
      disabled: 'The endpoint is disabled: it receives nothing until it is enabled again.',
      enabled: 'The endpoint is enabled: new events are delivered to it again.',
    };
    const notice = notices[one(ctx.query.done)];
    await pages.renderEndpoint(ctx, 200, endpoint, notice ? { notice } : {});
  });

  router.post('/webhooks/:id/rotate-secret', kit.forms, kit.requireSession, async (ctx) => {
    const endpoint = await pages.endpointOf(ctx, ctx.params.id ?? '');
    if (!endpoint) return kit.notFound(ctx, 'webhook endpoint');
    const chosen = Number(one(form(ctx).overlap_seconds) || ROTATION_CHOICES[0][0]);
    if (!ROTATION_CHOICES.some(([seconds]) => seconds === chosen))
      return pages.renderEndpoint(ctx, 400, endpoint, { error: 'Choose how long the old secret keeps signing.' });
    try {
      const rotated = await webhooks.rotateSecret(kit.signedInOf(ctx).orgId, endpoint.id, chosen);
      await pages.renderEndpoint(ctx, 200, rotated.endpoint, {
        rotated: { secret: rotated.secret, previousExpiresAt: rotated.endpoint.previousSecretExpiresAt ?? null },
      });
    } catch (error) {
      if (isError(error, 'not_found')) return kit.notFound(ctx, 'webhook endpoint');
      if (isError(error, 'service_unavailable'))
        return pages.renderEndpoint(ctx, 503, endpoint, {
          error: 'Signing secrets cannot be rotated: secret encryption is not configured on this server.',
        });
      throw error;
    }
  });
}
