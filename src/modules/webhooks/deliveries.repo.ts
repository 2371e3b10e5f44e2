/**
 * The delivery log's two statements that the ORM's query API does not express well: the
 * attempts of a whole page of deliveries in one query (window-limited per delivery), and the
 * replay's atomic check-and-update; and the read of a delivery's status for the hand-over of a
 * legacy delivery run. Raw SQL is outside the tenant filter, so every clause names the
 * workspace itself.
 */
import { WebhookAttempt, type WebhookDeliveryStatus } from '../../../db/entities/index.ts';
import type { EntityManager } from '../../../db/orm.ts';
import { WEBHOOK_WAKE_CHANNEL } from '../../queue/wakes.ts';

/** Attempts shown per delivery in the log: the most recent ones, across replay series. */
export const ATTEMPTS_PER_DELIVERY = 50;

/** Statuses a replay may start from; queued and delivering are still in flight. */
export const REPLAYABLE_STATUSES = ['delivered', 'failed', 'exhausted'] as const;

const RECENT_ATTEMPTS_SQL = `
  select * from (
    select a.*, row_number() over (partition by a.delivery_id order by a.series desc, a.attempt_number desc) as recency
    from webhook_attempts a
    where a.org_id = ? and a.delivery_id in (?)
  ) ranked
  where ranked.recency <= ?
  order by ranked.delivery_id, ranked.series, ranked.attempt_number`;

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
  const rows = await em.execute<Record<string, unknown>[]>(RECENT_ATTEMPTS_SQL, [orgId, [...deliveryIds], ATTEMPTS_PER_DELIVERY]);
  for (const row of rows) {
    delete row.recency;
    const attempt = em.map(WebhookAttempt, row);
    byDelivery.set(attempt.deliveryId, [...(byDelivery.get(attempt.deliveryId) ?? []), attempt]);
  }
  return byDelivery;
}

const REPLAY_SQL = `
  with previous as (
    select id, status from webhook_deliveries where id = ? and org_id = ? for update
  )
  update webhook_deliveries d
     set status = 'queued', replay_count = d.replay_count + 1, next_attempt_at = now(), lease_until = null, updated_at = now()
    from previous
   where d.id = previous.id
     and previous.status in (${REPLAYABLE_STATUSES.map((s) => `'${s}'`).join(', ')})
     and exists (
       select 1 from webhook_endpoints e where e.id = d.webhook_id and e.org_id = d.org_id and e.enabled
     )
  returning d.replay_count as series, previous.status as previous_status`;

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
  const [row] = await em.execute<{ series: number; previous_status: string }[]>(REPLAY_SQL, [deliveryId, orgId]);
  return row ? { series: Number(row.series), previousStatus: row.previous_status } : null;
}

/** Pokes a drain of the endpoint that may be running in some worker (delivered at commit). */
export async function notifyEndpointDrain(em: EntityManager, webhookId: string): Promise<void> {
  await em.execute(`select pg_notify('${WEBHOOK_WAKE_CHANNEL}', ?)`, [webhookId]);
}

/** Reads a workspace's delivery's status and endpoint, or undefined when it has no such delivery. */
export async function findDeliveryStatus(em: EntityManager, orgId: string, deliveryId: string): Promise<{ status: WebhookDeliveryStatus; webhook_id: string } | undefined> {
  const [row] = await em.getConnection().execute<{ status: WebhookDeliveryStatus; webhook_id: string }[]>(
    `select status, webhook_id from webhook_deliveries where id = ? and org_id = ?`,
    [deliveryId, orgId],
  );
  return row;
}
