import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../../db/ids.ts';
import { WEBHOOK_WAKE_CHANNEL } from '../../queue/wakes.ts';

/**
 * The SQL of the webhook fan-out (webhook-fan-out.ts) and reconciler. They serve every workspace: the fan-out
 * claims events across workspaces, and each delivery row it writes belongs to the event's
 * workspace (an endpoint joins its event on org_id).
 */

/** An endpoint of the event's workspace that existed and was enabled when the event was written. */
export interface Candidate {
  event_id: string;
  org_id: string;
  type: string;
  webhook_id: string;
  events: string[];
  /** The event's `data.endpoint_id`, which an addressed event (`automation.webhook`) is delivered to alone. */
  addressed_to: string | null;
}

export interface EndpointRef {
  id: string;
  org_id: string;
}

/** Locks up to `limit` events not fanned out yet, oldest first; other relays skip them. Inside a transaction. */
export async function claimUnfannedEvents(em: EntityManager, limit: number): Promise<string[]> {
  const rows = await em.execute<{ id: string }[]>(
    `/* all workspaces: the webhook fan-out takes every workspace's events */ select id from events
      where fanned_out_at is null
      order by created_at, id
      limit ? for update skip locked`,
    [limit],
  );
  return rows.map((row) => row.id);
}

/**
 * Each event with each endpoint of its workspace enabled and created by then, in event order;
 * an endpoint limited to some message streams (`streams`) is paired with an email's event only
 * when the email is in one of them.
 */
export async function findCandidates(em: EntityManager, eventIds: readonly string[]): Promise<Candidate[]> {
  return em.execute<Candidate[]>(
    `select e.id as event_id, e.org_id, e.type, w.id as webhook_id, w.events, e.data->>'endpoint_id' as addressed_to
       from events e
       join webhook_endpoints w on w.org_id = e.org_id and w.enabled and w.created_at <= e.created_at
      where e.id in (?)
        and (w.streams is null or e.data->>'email_id' is null
             or exists (select 1 from transactional_emails t where t.id = e.data->>'email_id' and t.org_id = e.org_id and t.stream = any(w.streams)))
      order by e.created_at, e.id, w.id`,
    [[...eventIds]],
  );
}

/** One delivery row per receiving candidate, due now (a repeated pass creates none twice), and a NOTIFY per endpoint. */
export async function insertDeliveries(em: EntityManager, receiving: readonly Candidate[], endpointIds: readonly string[]): Promise<void> {
  if (receiving.length === 0) return;
  const rows = receiving.map((candidate) => [newId(), candidate.org_id, candidate.webhook_id, candidate.event_id, candidate.type]);
  await em.execute(
    `insert into webhook_deliveries
       (id, org_id, webhook_id, event_id, event_type, status, attempt_count, replay_count, next_attempt_at, created_at, updated_at)
     values ${rows.map(() => `(?, ?, ?, ?, ?, 'queued', 0, 0, now(), now(), now())`).join(', ')}
     on conflict (webhook_id, event_id) do nothing`,
    rows.flat(),
    'run',
  );
  await em.execute(`select pg_notify('${WEBHOOK_WAKE_CHANNEL}', id) from (values ${endpointIds.map(() => '(?)').join(', ')}) as t (id)`, [
    ...endpointIds,
  ]);
}

export async function markFannedOut(em: EntityManager, eventIds: readonly string[]): Promise<void> {
  await em.execute(
    `/* all workspaces: the webhook fan-out takes every workspace's events */ update events set fanned_out_at = now() where id in (?)`,
    [[...eventIds]],
    'run',
  );
}

/** The ids among `endpointIds` whose drain lease is held. */
export async function drainingEndpoints(em: EntityManager, endpointIds: readonly string[]): Promise<Set<string>> {
  const rows = await em.execute<{ id: string }[]>(
    `/* all workspaces: the webhook fan-out wakes every workspace's endpoints */ select id from webhook_endpoints where id in (?) and drain_lease_until > now()`,
    [[...endpointIds]],
  );
  return new Set(rows.map((row) => row.id));
}

/** Endpoints with rows due for longer than `marginMs` (or attempts whose lease lapsed) and no drain running. */
export async function findStrandedEndpoints(em: EntityManager, marginMs: number, limit: number): Promise<EndpointRef[]> {
  return em.execute<EndpointRef[]>(
    `select s.webhook_id as id, s.org_id
       from (select distinct d.webhook_id, d.org_id from webhook_deliveries d
              where (d.status in ('queued', 'failed') and d.next_attempt_at < now() - make_interval(secs => ?))
                 or (d.status = 'delivering' and d.lease_until < now() - make_interval(secs => ?))) s
       left join webhook_endpoints w on w.id = s.webhook_id and w.org_id = s.org_id
      where w.drain_lease_until is null or w.drain_lease_until < now()
      order by s.webhook_id
      limit ?`,
    [marginMs / 1000, marginMs / 1000, limit],
  );
}
