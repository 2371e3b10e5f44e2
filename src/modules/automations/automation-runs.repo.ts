/**
 * Runs enter and hear about events here. Enrolment starts runs of a workspace's active
 * automations whose trigger matches, for some contacts, in the caller's transaction (so a
 * contact created, tagged or added to a segment and its runs commit together); events a waiting
 * run listens for make it due now. Both NOTIFY the automation's channel (a running drain sees
 * the rows at once) and return the automations whose actor is not draining, for the caller to
 * wake after its commit (automation-wake.ts). Raw SQL names the workspace in every statement.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../../db/ids.ts';
import { AUTOMATION_WAKE_CHANNEL } from '../../queue/wakes.ts';
import { durationSeconds, type AutomationDefinition, type TriggerType } from './automation-definition.ts';
import { addStats, type StatDeltas } from './automation-stats.repo.ts';

/** An automation whose queue got rows; `draining` when its actor's drain holds the lease. */
export interface TouchedAutomation {
  orgId: string;
  automationId: string;
  draining: boolean;
}

export interface Enrolment {
  orgId: string;
  type: TriggerType;
  /** What the trigger matched on (automation-definition.ts triggerKey): a segment id, a tag, an event name, `template:<id>`. */
  key: string | null;
  contactIds: readonly string[];
  /** Values the trigger brings (a custom event's properties), available to templates as `trigger.*`. */
  properties?: Record<string, unknown>;
  /** Only this automation (a date trigger enrols per automation, automation-date-trigger.ts). */
  automationId?: string;
}

interface ActiveAutomation {
  id: string;
  definition_id: string;
  reentry: AutomationDefinition['reentry'] | null;
  start: string;
  draining: boolean;
}

/**
 * Starts one run per (matching active automation, contact) the re-entry rule admits: `once`
 * (the default) admits a contact that never entered, `always` every time, `cooldown` when the
 * last entry is at least the cool-down ago. The rule is judged on the contact's enrolment row
 * under its lock, so two concurrent triggers for one contact start one run under `once`.
 * Returns the automations that got runs.
 */
export async function enrolContacts(em: EntityManager, enrolment: Enrolment): Promise<TouchedAutomation[]> {
  if (enrolment.contactIds.length === 0) return [];
  const automations = await em.execute<ActiveAutomation[]>(
    `select a.id, a.definition_id, d.definition->'reentry' as reentry, d.definition->>'start' as start,
            coalesce(a.drain_lease_until > now(), false) as draining
       from automations a join automation_definitions d on d.id = a.definition_id and d.org_id = a.org_id
      where a.org_id = ? and a.status = 'active' and a.trigger_type = ? and a.trigger_key is not distinct from ?
        and (?::text is null or a.id = ?)`,
    [enrolment.orgId, enrolment.type, enrolment.key, enrolment.automationId ?? null, enrolment.automationId ?? null],
  );
  const touched: TouchedAutomation[] = [];
  const context = JSON.stringify({ trigger: { type: enrolment.type, properties: enrolment.properties ?? {} } });
  const contactIds = JSON.stringify([...new Set(enrolment.contactIds)]);
  for (const automation of automations) {
    const mode = automation.reentry?.mode ?? 'once';
    const cooldown = automation.reentry?.mode === 'cooldown' ? (durationSeconds(automation.reentry.cooldown) ?? 0) : 0;
    const ids = JSON.stringify(enrolment.contactIds.map(() => newId()));
    const [row] = await em.execute<{ started: number }[]>(
      `with admitted as (
         insert into automation_enrolments (automation_id, contact_id, org_id, last_enrolled_at)
         select :automation, c.id, :org, now()
           from contacts c where c.org_id = :org and c.id in (select jsonb_array_elements_text(:contacts::jsonb))
         on conflict (automation_id, contact_id) do update set last_enrolled_at = excluded.last_enrolled_at
           where :mode = 'always' or (:mode = 'cooldown' and automation_enrolments.last_enrolled_at <= now() - make_interval(secs => :cooldown))
         returning contact_id
       ),
       numbered as (select contact_id, row_number() over () as n from admitted),
       started as (
         insert into automation_runs (id, org_id, automation_id, definition_id, contact_id, status, step_id, due_at, context, created_at, updated_at)
         select ids.id, :org, :automation, :definition, numbered.contact_id, 'active', :start, now(), :context::jsonb, now(), now()
           from numbered join jsonb_array_elements_text(:ids::jsonb) with ordinality as ids(id, n) on ids.n = numbered.n
         returning id
       )
       select (select count(*) from started)::int as started, pg_notify(:channel, :automation) is null as notified`,
      {
        automation: automation.id,
        org: enrolment.orgId,
        contacts: contactIds,
        mode,
        cooldown,
        definition: automation.definition_id,
        start: automation.start,
        context,
        ids,
        channel: AUTOMATION_WAKE_CHANNEL,
      },
    );
    const started = row?.started ?? 0;
    if (started === 0) continue;
    await addStats(em, enrolment.orgId, new Map<string, StatDeltas>([[automation.id, { totalRuns: started, activeRuns: started }]]));
    touched.push({ orgId: enrolment.orgId, automationId: automation.id, draining: automation.draining });
  }
  return touched;
}

/** An event a waiting run may listen for: `email.opened:<emailId>`, `email.clicked:<emailId>`, `email.replied:<emailId>`, `event:<name>`. */
export interface RunEvent {
  orgId: string;
  contactId: string;
  key: string;
  /** What the run's timeline records of it. */
  detail?: Record<string, unknown>;
}

/**
 * Makes the contact's active runs that wait for `key` due now, with the event noted in their
 * context (`heard`); the drain then takes the wait's event branch. Returns the automations touched.
 */
export async function signalRuns(em: EntityManager, event: RunEvent): Promise<TouchedAutomation[]> {
  // pg_notify returns void, which is not null: the condition keeps every automation and notifies each once.
  return em.execute<TouchedAutomation[]>(
    `with heard as (
       update automation_runs r
          set due_at = now(), waiting_for = null, updated_at = now(),
              context = jsonb_set(r.context, '{heard}', jsonb_build_object('key', :key::text, 'at', now(), 'detail', :detail::jsonb))
        where r.org_id = :org and r.contact_id = :contact and r.status = 'active' and r.waiting_for = :key
       returning r.automation_id
     )
     select distinct :org as "orgId", a.id as "automationId", coalesce(a.drain_lease_until > now(), false) as draining
       from automations a join heard h on h.automation_id = a.id
      where a.org_id = :org and pg_notify(:channel, a.id) is not null`,
    {
      org: event.orgId,
      contact: event.contactId,
      key: event.key,
      detail: JSON.stringify(event.detail ?? {}),
      channel: AUTOMATION_WAKE_CHANNEL,
    },
  );
}

/**
 * A change that may meet a goal: the contact got a tag (a `has_tag` goal, or an `in_segment`
 * goal naming a tag segment with that tag), joined a static segment, or sent a custom event.
 */
export interface GoalChange {
  contactId: string;
  kind: 'tag' | 'segment' | 'event';
  /** The tag, the segment id or the event name. */
  value: string;
}

/**
 * Makes due now the contact's active runs that wait (due later) under a definition whose goal
 * the change could meet, so the drain checks the goal at once instead of when the wait ends
 * (a goal not met after all costs one look: the run sleeps again). Runs a drain holds at this
 * moment are skipped rather than waited for (that would deadlock with a drain changing the same
 * contact); such a run sees the goal when its wait ends. NOTIFYs the active automations touched
 * and returns them for the caller to wake after its commit.
 */
export async function wakeGoalRuns(em: EntityManager, orgId: string, changes: readonly GoalChange[]): Promise<TouchedAutomation[]> {
  if (changes.length === 0) return [];
  return em.execute<TouchedAutomation[]>(
    `with changed as (select * from jsonb_to_recordset(:changes::jsonb) as c("contactId" text, kind text, value text)),
     due as (
       select r.id from automation_runs r
         join automation_definitions d on d.id = r.definition_id and d.org_id = r.org_id
        where r.org_id = :org and r.status = 'active' and r.due_at > now()
          and r.contact_id in (select "contactId" from changed) and d.definition->'goal' is not null
          and exists (
            select 1 from changed c
             where c."contactId" = r.contact_id
               and ((c.kind = 'tag' and (d.definition->'goal'->>'has_tag' = c.value
                      or exists (select 1 from segments s
                                  where s.org_id = r.org_id and s.id = d.definition->'goal'->>'in_segment'
                                    and s.type = 'tag' and c.value = any(s.tags))))
                 or (c.kind = 'segment' and d.definition->'goal'->>'in_segment' = c.value)
                 or (c.kind = 'event' and d.definition->'goal'->>'had_event' = c.value)))
        for update of r skip locked
     ),
     woken as (
       update automation_runs r set due_at = now(), updated_at = now()
         from due where r.id = due.id and r.org_id = :org
       returning r.automation_id
     )
     select distinct :org as "orgId", a.id as "automationId", coalesce(a.drain_lease_until > now(), false) as draining
       from automations a join woken w on w.automation_id = a.id
      where a.org_id = :org and a.status = 'active' and pg_notify(:channel, a.id) is not null`,
    { org: orgId, changes: JSON.stringify(changes), channel: AUTOMATION_WAKE_CHANNEL },
  );
}
