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
 * `keys` among their date keys, `limit` at most: an index scan over
 * `herald_contact_date_keys(custom_fields, created_at)` (migration 20261128060100), so only
 * the contacts whose date falls in the window are read, never the rest of the workspace.
 */
export async function readDateCandidates(
  em: EntityManager,
  automation: DateAutomation,
  keys: readonly string[],
  after: string,
  limit: number,
): Promise<DateCandidate[]> {
  return em.execute<DateCandidate[]>(DATE_CANDIDATES_SQL, {
    org: automation.org_id,
    keys: arrayLiteral(keys),
    after,
    name: automation.trigger.field.startsWith('custom.') ? automation.trigger.field.slice('custom.'.length) : '',
    limit,
  });
}

/** The candidates' statement (exported for the test that reads its plan). */
export const DATE_CANDIDATES_SQL = `select c.id, c.custom_fields->(:name::text) as value, c.created_at, c.custom_fields->'timezone' as timezone
   from contacts c
  where herald_contact_date_keys(c.custom_fields, c.created_at) && :keys::text[]
    and c.org_id = :org and c.id > :after
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
