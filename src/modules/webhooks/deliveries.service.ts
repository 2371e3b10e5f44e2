import type { MikroORM } from '@mikro-orm/postgresql';
import { type Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { WebhookDelivery, WebhookEndpoint, type WebhookAttempt, type WebhookDeliveryStatus } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { Config } from '../../config.ts';
import { AppError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import { findRecentAttempts, markForReplay } from './deliveries.repo.ts';
import { startDeliveryWorkflow } from './delivery-starter.ts';
import { deliveryWorkflowId, type DeliverWebhookInput } from './delivery-workflow.ts';

/** How long a replay waits for Temporal to accept the start before leaving it to the reconciler. */
const START_DEADLINE_MS = 5_000;

export interface DeliveryWithAttempts {
  delivery: WebhookDelivery;
  attempts: WebhookAttempt[];
}

/**
 * The delivery log of one workspace and replays. A replay is a row change first (atomic, in
 * PostgreSQL: back to queued, replay_count + 1, due now) and a workflow start second
 * (`webhook-delivery:<id>:replay-<n>`, through the engine's startDeliveryWorkflow). When
 * Temporal does not take the start within 5 s, the replay is still accepted: the row stays
 * queued, and the relay's reconciler starts series `replay_count` of any delivery queued for
 * over a minute; the workflow id makes the two starts one.
 */
export function createDeliveriesService(deps: {
  orm: MikroORM;
  temporal: Client;
  config: Pick<Config, 'temporal'>;
  logger: Logger;
}) {
  const { orm, temporal, logger } = deps;

  async function withinDeadline<T>(work: () => Promise<T>): Promise<T> {
    return temporal.withDeadline(Date.now() + START_DEADLINE_MS, work);
  }

  /** Stops the superseded series of a delivery that was waiting for a retry (best effort). */
  async function stopSeries(deliveryId: string, series: number, replay: number): Promise<void> {
    try {
      await withinDeadline(() =>
        temporal.workflow.getHandle(deliveryWorkflowId(deliveryId, series)).terminate(`superseded by replay ${replay}`),
      );
    } catch (error) {
      logger.debug('previous delivery series not terminated', { deliveryId, series, error });
    }
  }

  async function startSeries(input: DeliverWebhookInput): Promise<void> {
    try {
      await withinDeadline(() => startDeliveryWorkflow(temporal, deps.config, input));
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) return;
      logger.warn('replay workflow not started; the webhook reconciler will start it', {
        orgId: input.orgId,
        deliveryId: input.deliveryId,
        series: input.series,
        error,
      });
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
      const attempts = await findRecentAttempts(em, orgId, deliveries.items.map((d) => d.id));
      return {
        hasMore: deliveries.hasMore,
        items: deliveries.items.map((delivery) => ({ delivery, attempts: attempts.get(delivery.id) ?? [] })),
      };
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
        return { delivery, ...marked };
      });
      const { delivery, series, previousStatus } = replayed;
      if (previousStatus === 'failed') await stopSeries(delivery.id, series - 1, series);
      await startSeries({ orgId, deliveryId: delivery.id, series });
      const attempts = await findRecentAttempts(scopeToOrg(orm.em, orgId), orgId, [delivery.id]);
      return { delivery, attempts: attempts.get(delivery.id) ?? [] };
    },
  };
}

export type DeliveriesService = ReturnType<typeof createDeliveriesService>;
