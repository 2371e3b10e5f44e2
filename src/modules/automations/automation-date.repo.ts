/**
 * The date trigger's SQL: the active automations with a published date trigger (all
 * workspaces); for one of them, the contacts whose date may fall in the scanned window, read
 * through the date-key index a page at a time (the exact check is automation-date.fns.ts
 * `contactFiresOn`), and claiming the occurrences of those that fire.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { arrayLiteral } from '../../../db/prepared.ts';
import type { DateTrigger } from './automation-date.fns.ts';

export interface DateAutomation {
  id: string;
  org_id: string;
  trigger: DateTrigger;
  timezone: string;
}

/** Active automations whose published definition has a date trigger, of every workspace. */
export async function findDateAutomations(em: EntityManager): Promise<DateAutomation[]> {
  return em.getConnection().execute<DateAutomation[]>(
    `/* all workspaces: the date trigger scan covers every workspace's active date automations */
     select a.id, a.org_id, d.definition->'trigger' as trigger, coalesce(d.definition->>'timezone', 'UTC') as timezone
       from automations a join automation_definitions d on d.id = a.definition_id and d.org_id = a.org_id
      where a.status = 'active' and a.trigger_type = 'date'
      order by a.id`,
  );
}

/** A contact whose date may fire in the scanned window, with what the exact check needs. */
export interface DateCandidate {
  id: string;
  /** The trigger field's custom value (null for `created_at`). */
  value: unknown;
  /** As the driver gives it (an ISO string through MikroORM's raw queries). */
  created_at: Date | string;
  /** The contact's `timezone` custom field. */
  timezone: unknown;
}

/**
 * The contacts of the automation's workspace after `after` (keyset on id) that have one of
 * `keys` among their date keys, `limit` at most. A custom field's keys are read through the
 * GIN index over `herald_contact_custom_date_keys(custom_fields)` of the contacts that
 * `herald_contact_has_date_field` (migration 20261128140100; the statement repeats the
 * condition so the planner can use that partial index); `created_at` keys through the `(org_id, created_at, id)` index, one range per
 * day they name (for a month-day, that day of every year from the workspace's first contact to its last).
 * Either way only the contacts whose date falls in the window are read, never the rest.
 */
export async function readDateCandidates(
  em: EntityManager,
  automation: DateAutomation,
  keys: readonly string[],
  after: string,
  limit: number,
): Promise<DateCandidate[]> {
  const field = automation.trigger.field;
  return em.execute<DateCandidate[]>(field === 'created_at' ? CREATED_CANDIDATES_SQL : DATE_CANDIDATES_SQL, {
    org: automation.org_id,
    keys: arrayLiteral(keys),
    after,
    name: field.startsWith('custom.') ? field.slice('custom.'.length) : '',
    limit,
  });
}

/** The candidates' statement for a custom field (exported for the test that reads its plan). */
export const DATE_CANDIDATES_SQL = `select c.id, c.custom_fields->(:name::text) as value, c.created_at, c.custom_fields->'timezone' as timezone
   from contacts c
  where herald_contact_custom_date_keys(c.custom_fields) && :keys::text[]
    and herald_contact_has_date_field(c.custom_fields)
    and c.org_id = :org and c.id > :after
  order by c.id
  limit :limit`;

/**
 * The candidates' statement for `created_at` (keys `created_at|YYYY-MM-DD` or
 * `created_at|MM-DD`, UTC days): the UTC days they name, as ranges of `created_at`. A Feb 29 in
 * a year without one becomes Mar 1, a candidate the exact check turns down.
 */
export const CREATED_CANDIDATES_SQL = `with k as (select split_part(key, '|', 2) as v from unnest(:keys::text[]) key),
        span as (select min(created_at) as first, max(created_at) as last from contacts where org_id = :org),
        years as (
          select generate_series(extract(year from s.first at time zone 'UTC')::int, extract(year from s.last at time zone 'UTC')::int) as y
            from span s where s.first is not null),
        days as (
          select k.v::date as d from k where length(k.v) = 10
          union
          select make_date(y.y, split_part(k.v, '-', 1)::int, 1) + (split_part(k.v, '-', 2)::int - 1)
            from k cross join years y where length(k.v) = 5)
 select c.id, null::jsonb as value, c.created_at, c.timezone
   from days d
   cross join lateral (
     -- OFFSET 0 keeps this a range scan of (org_id, created_at) per day, never a walk of the workspace by id.
     select c.id, c.created_at, c.custom_fields->'timezone' as timezone
       from contacts c
      where c.org_id = :org
        and c.created_at >= d.d::timestamp at time zone 'UTC'
        and c.created_at < (d.d + 1)::timestamp at time zone 'UTC'
        and c.id > :after
     offset 0) c
  order by c.id
  limit :limit`;

/**
 * Inserts the occurrence rows of contacts that fire (each on its own local day); those a
 * concurrent pass inserted first are skipped. The contacts whose row this call inserted, by day.
 */
export async function claimDateOccurrences(
  em: EntityManager,
  automation: DateAutomation,
  firing: readonly { contactId: string; day: string }[],
): Promise<Map<string, string[]>> {
  if (firing.length === 0) return new Map();
  const rows = await em.execute<{ contact_id: string; occurs_on: string }[]>(
    `insert into automation_date_occurrences (automation_id, contact_id, occurs_on, org_id, enrolled_at)
     select :automation, f.contact_id, f.day::date, :org, now()
       from unnest(:contacts::text[], :days::text[]) as f(contact_id, day)
     on conflict do nothing
     returning contact_id, to_char(occurs_on, 'YYYY-MM-DD') as occurs_on`,
    {
      automation: automation.id,
      org: automation.org_id,
      contacts: arrayLiteral(firing.map((f) => f.contactId)),
      days: arrayLiteral(firing.map((f) => f.day)),
    },
  );
  const byDay = new Map<string, string[]>();
  for (const row of rows) byDay.set(row.occurs_on, [...(byDay.get(row.occurs_on) ?? []), row.contact_id]);
  return byDay;
}

/** Forgets the automation's occurrences older than a few days (a day fires only on itself, so they key nothing any more). */
export async function pruneDateOccurrences(em: EntityManager, automation: DateAutomation, today: string): Promise<void> {
  await em.execute(
    `delete from automation_date_occurrences
      where automation_id = :automation and org_id = :org and occurs_on < :today::date - 3`,
    { automation: automation.id, org: automation.org_id, today },
    'run',
  );
}
