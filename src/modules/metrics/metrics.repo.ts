import type { EntityManager } from '@mikro-orm/postgresql';
import { type ExpressionBuilder, sql } from 'kysely';
import { Broadcast, Domain, EMAIL_EVENT_TYPES, type EmailEventType } from '../../../db/entities/index.ts';
import type { HeraldDb } from '../../../db/orm.ts';
import { workspaceDb } from '../../../db/workspace-db.ts';
import type { BroadcastCounts, ContactCounts, DayCounts, DomainCounts, EventCounts, PeriodWindow } from './metrics.fns.ts';

/**
 * The aggregate queries behind GET /metrics, and the increments of the daily rollup they read
 * (written by email-events.ts). Event counts come from the daily rollup email_event_counts (a
 * few rows per day, not one per event), summed over the window's days. The reads go through
 * `workspaceDb`, which adds `org_id = <workspace>` to each; the rollup upsert is SQL text that
 * sets each row's org_id (one batch may span workspaces). Callers pass an EntityManager scoped
 * to the same workspace (scopeToOrg) for the ORM reads.
 */

/** One row of email_event_counts and how much to add to it. */
export interface CountIncrement {
  orgId: string;
  day: string;
  broadcastId: string;
  domain: string;
  type: EmailEventType;
  count: number;
}

const upsertSql = (rows: number) =>
  `insert into email_event_counts (org_id, day, broadcast_id, domain, type, count)
   values ${Array.from({ length: rows }, () => '(?, ?::date, ?, ?, ?, ?)').join(', ')}
   on conflict (org_id, day, broadcast_id, domain, type)
   do update set count = email_event_counts.count + excluded.count`;

/**
 * Adds `rows` to their email_event_counts rows (created at their count when absent) in one
 * upsert, in the caller's transaction, locking the rows in the order given. SQL text, not
 * `workspaceDb`: the rows of one batch may belong to several workspaces (sent-recorder.ts
 * records a batch of sends of many), each row names its own org_id.
 */
export async function addEventCounts(em: EntityManager, rows: readonly CountIncrement[]): Promise<void> {
  await em.execute(
    upsertSql(rows.length),
    rows.flatMap((row) => [row.orgId, row.day, row.broadcastId, row.domain, row.type, row.count]),
    'run',
  );
}

/** `coalesce(sum(count) filter (where type = 'sent'), 0) as sent, …` for every event type. */
const countColumns = (eb: ExpressionBuilder<HeraldDb, 'email_event_counts'>) =>
  EMAIL_EVENT_TYPES.map((type) => eb.fn.coalesce(eb.fn.sum<string | number>('count').filterWhere('type', '=', type), eb.lit(0)).as(type));

type CountRow = Record<(typeof EMAIL_EVENT_TYPES)[number], string | number>;

const toCounts = (row: CountRow): EventCounts => ({
  sent: Number(row.sent),
  delivered: Number(row.delivered),
  deferred: Number(row.deferred),
  failed: Number(row.failed),
  opened: Number(row.opened),
  clicked: Number(row.clicked),
  bounced: Number(row.bounced),
  complained: Number(row.complained),
  unsubscribed: Number(row.unsubscribed),
});

/** The window as rollup days: the first day (inclusive) and the day after the last (exclusive), `YYYY-MM-DD`. */
const dayRange = (window: PeriodWindow): [string, string] => [window.from.toISOString().slice(0, 10), window.to.toISOString().slice(0, 10)];

const rollup = (db: ReturnType<typeof workspaceDb>) => db.selectFrom('email_event_counts');

/**
 * The workspace's rollup rows of the window's days (the primary key's order: org_id, day, …).
 * With `stream`, the same rows computed from the events of that stream's emails instead (the
 * rollup has no stream: a stream filter reads email_events, slower over long periods).
 */
function windowCounts(em: EntityManager, orgId: string, window: PeriodWindow, stream?: string) {
  const [from, to] = dayRange(window);
  const db = workspaceDb(em, orgId);
  if (!stream) return rollup(db).where('day', '>=', from).where('day', '<', to);
  const ofStream = db
    .selectFrom('email_events as ev')
    .innerJoin('transactional_emails as t', 't.id', 'ev.email_id')
    .where('t.stream', '=', stream)
    .where('ev.occurred_at', '>=', `${from}T00:00:00Z`)
    .where('ev.occurred_at', '<', `${to}T00:00:00Z`)
    .select([
      'ev.org_id',
      sql<string>`(ev.occurred_at at time zone 'UTC')::date`.as('day'),
      sql<string>`coalesce(ev.broadcast_id, '')`.as('broadcast_id'),
      'ev.domain',
      'ev.type',
      sql<number>`count(*)`.as('count'),
    ])
    .groupBy(['ev.org_id', sql`(ev.occurred_at at time zone 'UTC')::date`, sql`coalesce(ev.broadcast_id, '')`, 'ev.domain', 'ev.type']);
  // The derived rows have the rollup's columns, so the readers below treat them as the rollup.
  return db.selectFrom(ofStream.as('email_event_counts')) as unknown as ReturnType<typeof rollup>;
}

/** Events of the window per UTC day, by type; days without events are absent. */
export async function countEventsByDay(em: EntityManager, orgId: string, window: PeriodWindow, stream?: string): Promise<DayCounts[]> {
  const rows = await windowCounts(em, orgId, window, stream)
    // Grouped by the date column (an input column wins over the output name in GROUP BY).
    .select((eb) => [sql<string>`to_char(${eb.ref('day')}, 'YYYY-MM-DD')`.as('day'), ...countColumns(eb)])
    .groupBy('day')
    .execute();
  return rows.map((row) => ({ day: row.day, ...toCounts(row) }));
}

/**
 * The `limit` broadcasts with the most sent events in the window (ties: more delivered, then
 * id), and how many broadcasts had any event in it.
 */
export async function topBroadcasts(
  em: EntityManager,
  orgId: string,
  window: PeriodWindow,
  limit: number,
  stream?: string,
): Promise<{ campaigns: number; top: BroadcastCounts[] }> {
  const rows = await windowCounts(em, orgId, window, stream)
    .where('broadcast_id', '<>', '')
    .select((eb) => ['broadcast_id', ...countColumns(eb), eb.fn.countAll<string>().over().as('campaigns')])
    .groupBy('broadcast_id')
    .orderBy('sent', 'desc')
    .orderBy('delivered', 'desc')
    .orderBy('broadcast_id')
    .limit(limit)
    .execute();
  return {
    campaigns: Number(rows[0]?.campaigns ?? 0),
    top: rows.map((row) => ({ broadcastId: row.broadcast_id, ...toCounts(row) })),
  };
}

/** Events of the window per sending domain, by type. */
export async function countEventsByDomain(
  em: EntityManager,
  orgId: string,
  window: PeriodWindow,
  stream?: string,
): Promise<DomainCounts[]> {
  const rows = await windowCounts(em, orgId, window, stream)
    .select((eb) => ['domain', ...countColumns(eb)])
    .groupBy('domain')
    .execute();
  return rows.map((row) => ({ domain: row.domain, ...toCounts(row) }));
}

/** Contacts of the workspace: all of them, and per status. */
export async function countContacts(em: EntityManager, orgId: string): Promise<ContactCounts> {
  const row = await workspaceDb(em, orgId)
    .selectFrom('contacts')
    .select((eb) => [
      eb.fn.countAll<string>().as('total'),
      eb.fn.countAll<string>().filterWhere('status', '=', 'active').as('active'),
      eb.fn.countAll<string>().filterWhere('status', '=', 'unsubscribed').as('unsubscribed'),
      eb.fn.countAll<string>().filterWhere('status', '=', 'bounced').as('bounced'),
      eb.fn.countAll<string>().filterWhere('status', '=', 'complained').as('complained'),
    ])
    .executeTakeFirst();
  return {
    total: Number(row?.total ?? 0),
    active: Number(row?.active ?? 0),
    unsubscribed: Number(row?.unsubscribed ?? 0),
    bounced: Number(row?.bounced ?? 0),
    complained: Number(row?.complained ?? 0),
  };
}

/** Names of the workspace's broadcasts among `ids` (a deleted broadcast has none). */
export async function broadcastNames(em: EntityManager, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const broadcasts = await em.find(Broadcast, { id: { $in: [...ids] } }, { fields: ['id', 'name'] });
  return new Map(broadcasts.map((b) => [b.id, b.name]));
}

/** Every domain name of the workspace. */
export async function workspaceDomainNames(em: EntityManager): Promise<string[]> {
  const domains = await em.find(Domain, {}, { fields: ['domain'], orderBy: { domain: 'asc' } });
  return domains.map((d) => d.domain);
}
