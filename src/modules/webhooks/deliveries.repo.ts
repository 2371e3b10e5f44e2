/**
 * The delivery log's two statements that the ORM's query API does not express well: the
 * attempts of a whole page of deliveries in one query (window-limited per delivery), and the
 * replay's atomic check-and-update. They go through `workspaceDb`, which adds
 * `org_id = <workspace>` for every workspace table a statement names (CTE and subqueries
 * included).
 */
import { sql } from 'kysely';
import { WebhookAttempt } from '../../../db/entities/index.ts';
import type { EntityManager } from '../../../db/orm.ts';
import { workspaceDb } from '../../../db/workspace-db.ts';
import { WEBHOOK_WAKE_CHANNEL } from '../../queue/wakes.ts';

/** Attempts shown per delivery in the log: the most recent ones, across replay series. */
export const ATTEMPTS_PER_DELIVERY = 50;

/** Statuses a replay may start from; queued and delivering are still in flight. */
export const REPLAYABLE_STATUSES = ['delivered', 'failed', 'exhausted'] as const;

/**
 * The latest ATTEMPTS_PER_DELIVERY attempts of each of some deliveries of one workspace, in
 * one query, oldest first per delivery (series, then attempt number).
 */
export async function findRecentAttempts(
  em: EntityManager,
  orgId: string,
  deliveryIds: readonly string[],
): Promise<Map<string, WebhookAttempt[]>> {
  const byDelivery = new Map<string, WebhookAttempt[]>();
  if (deliveryIds.length === 0) return byDelivery;
  const rows = await workspaceDb(em, orgId)
    .selectFrom((db) =>
      db
        .selectFrom('webhook_attempts as a')
        .selectAll('a')
        .select((eb) =>
          // bigint: the driver hands it over as text; compared in SQL only.
          eb.fn
            .agg<number>('row_number')
            .over((over) => over.partitionBy('a.delivery_id').orderBy('a.series', 'desc').orderBy('a.attempt_number', 'desc'))
            .as('recency'),
        )
        .where('a.delivery_id', 'in', [...deliveryIds])
        .as('ranked'),
    )
    .selectAll('ranked')
    .where('ranked.recency', '<=', ATTEMPTS_PER_DELIVERY)
    .orderBy('ranked.delivery_id')
    .orderBy('ranked.series')
    .orderBy('ranked.attempt_number')
    .execute();
  for (const { recency: _recency, ...columns } of rows) {
    const attempt = em.map(WebhookAttempt, columns as never);
    byDelivery.set(attempt.deliveryId, [...(byDelivery.get(attempt.deliveryId) ?? []), attempt]);
  }
  return byDelivery;
}

/**
 * Moves a finished delivery back to queued for a new attempt series, in one statement: only
 * from delivered, failed or exhausted, and only while its endpoint is enabled. Returns the new
 * series number (= replay_count) and the status it left, or null when nothing was changed.
 * The row is due now (`next_attempt_at`): should the caller fail to wake the endpoint's actor,
 * the relay's reconciler wakes it.
 */
export async function markForReplay(
  em: EntityManager,
  orgId: string,
  deliveryId: string,
): Promise<{ series: number; previousStatus: string } | null> {
  const row = await workspaceDb(em, orgId)
    // The delivery's status before the update; its row stays locked until the commit.
    .with('previous', (db) => db.selectFrom('webhook_deliveries').select(['id', 'status']).where('id', '=', deliveryId).forUpdate())
    .updateTable('webhook_deliveries as d')
    .set((eb) => ({
      status: 'queued',
      replay_count: eb('d.replay_count', '+', 1),
      series_attempts: 0,
      next_attempt_at: sql<Date>`now()`,
      lease_until: null,
      updated_at: sql<Date>`now()`,
    }))
    .from('previous')
    .whereRef('d.id', '=', 'previous.id')
    .where('previous.status', 'in', REPLAYABLE_STATUSES)
    // The endpoint is the workspace's (workspaceDb scopes e like d).
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('webhook_endpoints as e')
          .select(eb.lit(1).as('one'))
          .whereRef('e.id', '=', 'd.webhook_id')
          .where('e.enabled', '=', true),
      ),
    )
    .returning(['d.replay_count as series', 'previous.status as previous_status'])
    .executeTakeFirst();
  return row ? { series: Number(row.series), previousStatus: row.previous_status } : null;
}

/** Pokes a drain of the endpoint that may be running in some worker (delivered at commit). */
export async function notifyEndpointDrain(em: EntityManager, webhookId: string): Promise<void> {
  await em.execute(`select pg_notify('${WEBHOOK_WAKE_CHANNEL}', ?)`, [webhookId]);
}
