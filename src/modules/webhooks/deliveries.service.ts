import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { WebhookDelivery, WebhookEndpoint, type WebhookAttempt, type WebhookDeliveryStatus } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { Config } from '../../config.ts';
import { AppError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import { findRecentAttempts, markForReplay, notifyEndpointDrain } from './deliveries.repo.ts';
import { webhookEndpointActorContract } from '../../../workflows/webhook-endpoint.ts';
import { wakeActors } from '../../temporal/actor-wake.ts';

/** How long a replay waits for Temporal to take the wake-up before leaving it to the reconciler. */
const WAKE_DEADLINE_MS = 5_000;

export interface DeliveryWithAttempts {
  delivery: WebhookDelivery;
  attempts: WebhookAttempt[];
}

/**
 * The delivery log of one workspace and replays. A replay is a row change (atomic, in
 * PostgreSQL: back to queued, replay_count + 1, due now), then a wake-up of the endpoint's
 * actor (`webhook-endpoint:<webhookId>`), which sends it with its next drain. When Temporal does
 * not take the wake-up within 5 s, the replay is still accepted: the row is due, and the
 * relay's reconciler wakes any endpoint with due rows and no drain running.
 */
export function createDeliveriesService(deps: { orm: MikroORM; temporal: Client; config: Pick<Config, 'temporal'>; logger: Logger }) {
  const { orm, temporal, logger } = deps;

  async function wakeEndpoint(orgId: string, endpointId: string): Promise<void> {
    try {
      await wakeActors(temporal, deps.config, webhookEndpointActorContract, [{ orgId, endpointId }], { deadlineMs: WAKE_DEADLINE_MS });
    } catch (error) {
      logger.warn('replay: endpoint actor not woken; the webhook reconciler will wake it', { orgId, endpointId, error });
    }
  }

  return {
    /**
     * Newest first, keyset-paginated on (createdAt, id), optionally one endpoint's and/or one
     * status; each delivery with its latest attempts (one query for the whole page). A
     * `webhookId` that is not the workspace's simply matches nothing.
     */
    async listDeliveries(
      orgId: string,
      page: { limit: number; after?: KeysetPosition | undefined },
      filters: { webhookId?: string | undefined; status?: WebhookDeliveryStatus | undefined } = {},
    ): Promise<KeysetPage<DeliveryWithAttempts>> {
      const em = scopeToOrg(orm.em, orgId);
      const where = {
        ...(filters.webhookId ? { webhookId: filters.webhookId.toLowerCase() } : {}),
        ...(filters.status ? { status: filters.status } : {}),
      };
      const deliveries = await findKeysetPage(em, WebhookDelivery, where, page);
      const attempts = await findRecentAttempts(
        em,
        orgId,
        deliveries.items.map((d) => d.id),
      );
      return {
        hasMore: deliveries.hasMore,
        items: deliveries.items.map((delivery) => ({ delivery, attempts: attempts.get(delivery.id) ?? [] })),
      };
    },

    /** How many of an endpoint's deliveries wait to be sent or retried (what deleting it ends). */
    async countWaiting(orgId: string, webhookId: string): Promise<number> {
      return scopeToOrg(orm.em, orgId).count(WebhookDelivery, {
        webhookId: webhookId.toLowerCase(),
        status: { $in: ['queued', 'failed'] },
      });
    },

    /** The delivery of one event to one endpoint, once the fan-out has made it (null before). */
    async findDeliveryOfEvent(orgId: string, webhookId: string, eventId: string): Promise<WebhookDelivery | null> {
      return scopeToOrg(orm.em, orgId).findOne(WebhookDelivery, { webhookId: webhookId.toLowerCase(), eventId: eventId.toLowerCase() });
    },

    /** One delivery with its latest attempts (oldest first); 404 for an unknown id or another workspace's. */
    async getDelivery(orgId: string, id: string): Promise<DeliveryWithAttempts> {
      const em = scopeToOrg(orm.em, orgId);
      const delivery = await em.findOne(WebhookDelivery, { id: id.toLowerCase() });
      if (!delivery) throw new AppError('not_found', `Webhook delivery ${id} does not exist.`);
      const attempts = await findRecentAttempts(em, orgId, [delivery.id]);
      return { delivery, attempts: attempts.get(delivery.id) ?? [] };
    },

    /**
     * Queues a new attempt series for a finished delivery (delivered, failed or exhausted):
     * same delivery id and event id, status queued, replay_count + 1, series = replay_count.
     * 404 for another workspace's id; 409 conflict while it is still queued or delivering, or
     * when its endpoint is disabled.
     */
    async replayDelivery(orgId: string, id: string): Promise<DeliveryWithAttempts> {
      const deliveryId = id.toLowerCase();
      const replayed = await scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const marked = await markForReplay(em, orgId, deliveryId);
        const delivery = await em.findOne(WebhookDelivery, { id: deliveryId });
        if (!delivery) throw new AppError('not_found', `Webhook delivery ${id} does not exist.`);
        if (!marked) {
          if (delivery.status === 'queued' || delivery.status === 'delivering') {
            throw new AppError('conflict', `Delivery ${id} is still ${delivery.status}; replay it once it has finished.`, {
              reason: 'DELIVERY_IN_PROGRESS',
              status: delivery.status,
            });
          }
          if (!(await em.findOne(WebhookEndpoint, { id: delivery.webhookId }))) {
            throw new AppError('conflict', `The endpoint of delivery ${id} was deleted; it cannot receive a replay.`, {
              reason: 'ENDPOINT_DELETED',
              webhook_id: delivery.webhookId,
            });
          }
          throw new AppError('conflict', `The endpoint of delivery ${id} is disabled; re-enable it (PATCH enabled: true) to replay.`, {
            reason: 'ENDPOINT_DISABLED',
            webhook_id: delivery.webhookId,
          });
        }
        await notifyEndpointDrain(em, delivery.webhookId);
        return { delivery };
      });
      const { delivery } = replayed;
      await wakeEndpoint(orgId, delivery.webhookId);
      const attempts = await findRecentAttempts(scopeToOrg(orm.em, orgId), orgId, [delivery.id]);
      return { delivery, attempts: attempts.get(delivery.id) ?? [] };
    },
  };
}

export type DeliveriesService = ReturnType<typeof createDeliveriesService>;
