import { WEBHOOK_DELIVERY_STATUSES, type WebhookDeliveryStatus, type WebhookEndpoint } from '../../../db/entities/index.ts';
import type { KeysetPosition } from '../../../db/keyset.ts';
import { AppError, type ErrorCode } from '../../errors.ts';
import type { ApiServices } from '../../api-composition.ts';
import { type DashboardArea, type DashboardContext, type DashboardKit, form, one } from './dashboard.router.ts';
import { deliveryPage, endpointPage, ROTATION_CHOICES, webhooksPage, type EndpointPageModel } from './dashboard-webhooks.pages.ts';

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

const isError = (error: unknown, code: ErrorCode): error is AppError => error instanceof AppError && error.code === code;

/** What the dashboard says when a replay is refused (the service's 409 reasons). */
function conflictText(error: AppError): string {
  const reason = error.details?.reason;
  if (reason === 'ENDPOINT_DISABLED')
    return 'Its endpoint is disabled: re-enable it (PATCH /api/v1/webhooks/{id} with enabled: true), then replay.';
  if (reason === 'ENDPOINT_DELETED') return 'Its endpoint was deleted: the delivery cannot be replayed.';
  return 'This delivery is still in flight (queued or delivering): replay it once it has finished.';
}

/**
 * The webhooks pages of the dashboard (/dashboard/webhooks): endpoints, an endpoint's delivery
 * log with a status filter and its secret rotation, a delivery's attempts and its replay. All
 * through the API's webhooks and deliveries services (tenancy, replay rules, sealed secrets).
 */
export function webhooksArea(services: ApiServices): DashboardArea {
  const { webhooks, deliveries } = services;

  return (router, kit: DashboardKit) => {
    const { notFound } = kit;

    /** The endpoint page: the endpoint, one page of its delivery log (filtered), and what happened. */
    async function renderEndpoint(
      ctx: DashboardContext,
      status: number,
      endpoint: WebhookEndpoint,
      extra: Partial<EndpointPageModel> = {},
    ) {
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
    }

    /** The workspace's endpoint `id`, or null when it has none. */
    async function endpointOf(ctx: DashboardContext, id: string): Promise<WebhookEndpoint | null> {
      if (!ID.test(id)) return null;
      try {
        return await webhooks.getWebhook(kit.signedInOf(ctx).orgId, id);
      } catch (error) {
        if (isError(error, 'not_found')) return null;
        throw error;
      }
    }

    async function renderDelivery(ctx: DashboardContext, status: number, id: string, extra: { error?: string; notice?: string } = {}) {
      const signedIn = kit.signedInOf(ctx);
      let found;
      try {
        found = ID.test(id) ? await deliveries.getDelivery(signedIn.orgId, id) : null;
      } catch (error) {
        if (!isError(error, 'not_found')) throw error;
        found = null;
      }
      if (!found) return notFound(ctx, 'delivery');
      let endpoint: WebhookEndpoint | null = null;
      try {
        endpoint = await webhooks.getWebhook(signedIn.orgId, found.delivery.webhookId);
      } catch (error) {
        if (!isError(error, 'not_found')) throw error;
      }
      kit.send(ctx, status, deliveryPage({ signedIn, delivery: found.delivery, attempts: found.attempts, endpoint, ...extra }));
    }

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
        }),
      );
    });

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
      if (!ID.test(id)) return notFound(ctx, 'delivery');
      try {
        await deliveries.replayDelivery(kit.signedInOf(ctx).orgId, id);
      } catch (error) {
        if (isError(error, 'not_found')) return notFound(ctx, 'delivery');
        if (isError(error, 'conflict')) return renderDelivery(ctx, 409, id, { error: conflictText(error) });
        throw error;
      }
      ctx.redirect(`/dashboard/webhooks/deliveries/${id.toLowerCase()}?replayed=1`);
      ctx.status = 303;
    });

    router.get('/webhooks/:id', kit.requireSession, async (ctx) => {
      const endpoint = await endpointOf(ctx, ctx.params.id ?? '');
      if (!endpoint) return notFound(ctx, 'webhook endpoint');
      await renderEndpoint(ctx, 200, endpoint);
    });

    router.post('/webhooks/:id/rotate-secret', kit.forms, kit.requireSession, async (ctx) => {
      const endpoint = await endpointOf(ctx, ctx.params.id ?? '');
      if (!endpoint) return notFound(ctx, 'webhook endpoint');
      const chosen = Number(one(form(ctx).overlap_seconds) || ROTATION_CHOICES[0][0]);
      if (!ROTATION_CHOICES.some(([seconds]) => seconds === chosen))
        return renderEndpoint(ctx, 400, endpoint, { error: 'Choose how long the old secret keeps signing.' });
      try {
        const rotated = await webhooks.rotateSecret(kit.signedInOf(ctx).orgId, endpoint.id, chosen);
        await renderEndpoint(ctx, 200, rotated.endpoint, {
          rotated: { secret: rotated.secret, previousExpiresAt: rotated.endpoint.previousSecretExpiresAt ?? null },
        });
      } catch (error) {
        if (isError(error, 'not_found')) return notFound(ctx, 'webhook endpoint');
        if (isError(error, 'service_unavailable'))
          return renderEndpoint(ctx, 503, endpoint, {
            error: 'Signing secrets cannot be rotated: secret encryption is not configured on this server.',
          });
        throw error;
      }
    });
  };
}
