/**
 * The date trigger's SQL: the active automations with a published date trigger (all
 * workspaces), and, for one of them, claiming a batch of contacts whose date fires today
 * (set-based, the match of automation-date.fns.ts `occursToday` in SQL; text that is no date is
 * never cast, so an unparsable value is skipped, not an error).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { arrayLiteral } from '../../../db/prepared.ts';
import type { DateMatch, DateTrigger } from './automation-date.fns.ts';

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

/**
 * Claims up to `limit` contacts of the automation's workspace whose date fires under `match`
 * and that have no occurrence today yet: their occurrence rows are inserted (a concurrent pass
 * that claimed one first wins, the other skips it) and their ids returned, for the caller to
 * enrol in the same transaction.
 */
export async function claimDateOccurrences(
  em: EntityManager,
  automation: DateAutomation,
  match: DateMatch,
  limit: number,
): Promise<string[]> {
  const rows = await em.execute<{ contact_id: string }[]>(
    `with dated as (
       select c.id, substring(case when :field = 'created_at' then to_char(c.created_at at time zone :tz, 'YYYY-MM-DD')
                                   else c.custom_fields->>(substr(:field, 8)) end
                              from '^([0-9]{4}-[0-9]{2}-[0-9]{2})($|[T ])') as d
         from contacts c
        where c.org_id = :org
     ),
     due as (
       select dated.id from dated
        where dated.d is not null
          and case when :repeat = 'once' then dated.d = :date
                   else substr(dated.d, 6) = any(:monthDays::text[])
                        and substr(dated.d, 1, 4)::int < :beforeYear
                        and (substr(dated.d, 6) <> '02-29'
                             or (substr(dated.d, 1, 4)::int % 4 = 0
                                 and (substr(dated.d, 1, 4)::int % 100 <> 0 or substr(dated.d, 1, 4)::int % 400 = 0)))
              end
          and not exists (select 1 from automation_date_occurrences o
                           where o.automation_id = :automation and o.contact_id = dated.id and o.occurs_on = :today::date and o.org_id = :org)
        order by dated.id
        limit :limit
     )
     insert into automation_date_occurrences (automation_id, contact_id, occurs_on, org_id, enrolled_at)
     select :automation, due.id, :today::date, :org, now() from due
     on conflict do nothing
     returning contact_id`,
    {
      org: automation.org_id,
      automation: automation.id,
      field: automation.trigger.field,
      tz: automation.timezone,
      repeat: match.repeat,
      date: match.repeat === 'once' ? match.date : '',
      monthDays: arrayLiteral(match.repeat === 'yearly' ? match.monthDays : []),
      beforeYear: match.repeat === 'yearly' ? match.beforeYear : 0,
      today: match.today,
      limit,
    },
  );
  return rows.map((row) => row.contact_id);
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
