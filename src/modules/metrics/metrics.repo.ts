import type { EntityManager } from '@mikro-orm/postgresql';
import { Broadcast, Domain, EMAIL_EVENT_TYPES, type EmailEventType } from '../../../db/entities/index.ts';
import type { BroadcastCounts, ContactCounts, DayCounts, DomainCounts, EventCounts, PeriodWindow } from './metrics.fns.ts';

/**
 * The aggregate queries behind GET /metrics, and the increments of the daily rollup they read
 * (written by email-events.ts). Event counts come from the daily rollup email_event_counts (a
 * few rows per day, not one per event), summed over the window's days. Raw SQL bypasses the
 * ORM's tenant filter, so every statement here names `org_id` itself; callers pass an
 * EntityManager scoped to the same workspace (scopeToOrg) for the ORM reads.
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
 * upsert, in the caller's transaction, locking the rows in the order given.
 */
export async function addEventCounts(em: EntityManager, rows: readonly CountIncrement[]): Promise<void> {
  await em.execute(
    upsertSql(rows.length),
    rows.flatMap((row) => [row.orgId, row.day, row.broadcastId, row.domain, row.type, row.count]),
    'run',
  );
}

/** `coalesce(sum(count) filter (where type = 'sent'), 0) as sent, …` for every event type (constants, not input). */
const COUNT_COLUMNS = EMAIL_EVENT_TYPES.map(
  (type) => `coalesce(sum(count) filter (where type = '${type}'), 0) as ${type}`,
).join(', ');

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
const dayRange = (window: PeriodWindow): [string, string] => [
  window.from.toISOString().slice(0, 10),
  window.to.toISOString().slice(0, 10),
];

/** Events of the window per UTC day, by type; days without events are absent. */
export async function countEventsByDay(em: EntityManager, orgId: string, window: PeriodWindow): Promise<DayCounts[]> {
  const rows = await em.execute<(CountRow & { day: string })[]>(
    `select to_char(day, 'YYYY-MM-DD') as day, ${COUNT_COLUMNS}
       from email_event_counts
      where org_id = ? and day >= ?::date and day < ?::date
      group by day`,
    [orgId, ...dayRange(window)],
  );
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
): Promise<{ campaigns: number; top: BroadcastCounts[] }> {
  const rows = await em.execute<(CountRow & { broadcast_id: string; campaigns: string })[]>(
    `select broadcast_id, ${COUNT_COLUMNS}, count(*) over () as campaigns
       from email_event_counts
      where org_id = ? and day >= ?::date and day < ?::date and broadcast_id <> ''
      group by broadcast_id
      order by sent desc, delivered desc, broadcast_id
      limit ?`,
    [orgId, ...dayRange(window), limit],
  );
  return {
    campaigns: Number(rows[0]?.campaigns ?? 0),
    top: rows.map((row) => ({ broadcastId: row.broadcast_id, ...toCounts(row) })),
  };
}

/** Events of the window per sending domain, by type. */
export async function countEventsByDomain(em: EntityManager, orgId: string, window: PeriodWindow): Promise<DomainCounts[]> {
  const rows = await em.execute<(CountRow & { domain: string })[]>(
    `select domain, ${COUNT_COLUMNS}
       from email_event_counts
      where org_id = ? and day >= ?::date and day < ?::date
      group by domain`,
    [orgId, ...dayRange(window)],
  );
  return rows.map((row) => ({ domain: row.domain, ...toCounts(row) }));
}

/** Contacts of the workspace: all of them, and per status. */
export async function countContacts(em: EntityManager, orgId: string): Promise<ContactCounts> {
  const [row] = await em.execute<Record<keyof ContactCounts, string>[]>(
    `select count(*) as total,
            count(*) filter (where status = 'active') as active,
            count(*) filter (where status = 'unsubscribed') as unsubscribed,
            count(*) filter (where status = 'bounced') as bounced,
            count(*) filter (where status = 'complained') as complained
       from contacts
      where org_id = ?`,
    [orgId],
  );
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
