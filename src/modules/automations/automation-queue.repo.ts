/**
 * The statements of an automation's queue: its drain lease, the claim of due runs (with their
 * contacts), the facts a condition reads, and the write of a batch's advances. A batch is
 * claimed, advanced and written in ONE transaction (the run rows stay locked meanwhile), so a
 * step and what it did (the email row, the contact change, the timeline, the counters) commit
 * together or not at all. Raw SQL names the workspace in every statement.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../../db/ids.ts';
import { spreadBalanceSql } from '../orgs/credits.repo.ts';
import { utcDay } from '../sends/sends.fns.ts';
import { SEND_WAKE_CHANNEL } from '../../queue/wakes.ts';
import type { QueueState } from '../../queue/drainer.ts';
import type { ClaimedRun, RunContext } from './automation-engine.ts';
import type { TrackingChoice } from '../tracking/tracking.fns.ts';

interface ClaimedRow {
  id: string;
  automation_id: string;
  definition_id: string;
  step_id: string | null;
  context: RunContext;
  contact_id: string | null;
  email: string | null;
  first_name: string;
  last_name: string;
  company: string;
  contact_status: string | null;
  tags: string[] | null;
  custom_fields: Record<string, unknown> | null;
  suppressed: boolean;
  created_at: Date;
}

/** Takes or renews the automation's drain lease; null when the automation is gone, else its status. */
export async function leaseAutomation(em: EntityManager, orgId: string, automationId: string, seconds: number): Promise<string | null> {
  const [row] = await em.execute<{ status: string }[]>(
    `update automations set drain_lease_until = now() + make_interval(secs => ?) where id = ? and org_id = ? returning status`,
    [seconds, automationId, orgId],
  );
  return row?.status ?? null;
}

export async function releaseAutomation(em: EntityManager, orgId: string, automationId: string): Promise<void> {
  await em.execute(`update automations set drain_lease_until = null where id = ? and org_id = ?`, [automationId, orgId]);
}

/** The due runs of the automation (while it is active) that `lane` picks, for the claim's two lanes. */
function dueRunsOf(lane: 'is not null' | 'is null', limit: string): string {
  return `select r.id from automation_runs r
           where r.automation_id = :automation and r.org_id = :org and r.status = 'active' and r.due_at <= now()
             and (r.context -> 'wait') ${lane}
             and exists (select 1 from automations a where a.id = :automation and a.org_id = :org and a.status = 'active')
           order by r.due_at
           limit ${limit}
           for update of r skip locked`;
}

/**
 * Locks up to `limit` due runs of an active automation, skipping runs another drain holds, with
 * each run's contact as it is now (null when deleted) and whether its address is suppressed.
 * Runs in a wait whose time has come (or whose event arrived) are claimed first, oldest due
 * first (automation_runs_wait_due_index); the rest of the batch is the other due runs (entering
 * their first step, held by a warm-up cap, continuing a long advance), oldest due first. So a
 * burst of enrolments, or an automation resumed with a backlog, never makes a due wait queue
 * behind the parking of runs that came after it. Runs of a paused (or draft, or archived)
 * automation are not due.
 */
export async function claimDueRuns(em: EntityManager, orgId: string, automationId: string, limit: number): Promise<ClaimedRun[]> {
  const rows = await em.execute<ClaimedRow[]>(
    `with waits as (${dueRunsOf('is not null', ':limit')}),
          others as (${dueRunsOf('is null', '(:limit - (select count(*) from waits))')}),
          claimed as (select id, 0 as lane from waits union all select id, 1 from others)
     select r.id, r.automation_id, r.definition_id, r.step_id, r.context, r.created_at,
            c.id as contact_id, c.email, c.first_name, c.last_name, c.company, c.status as contact_status, c.tags, c.custom_fields,
            exists (select 1 from suppressions x where x.org_id = r.org_id and x.email = c.email and x.stream in ('', 'broadcast')) as suppressed
       from claimed k
       join automation_runs r on r.id = k.id
       left join contacts c on c.id = r.contact_id and c.org_id = r.org_id
      order by k.lane, r.due_at`,
    { automation: automationId, org: orgId, limit },
  );
  return rows.map((row) => ({
    id: row.id,
    automationId: row.automation_id,
    definitionId: row.definition_id,
    definitionVersion: 0,
    stepId: row.step_id,
    context: row.context,
    createdAt: new Date(row.created_at),
    contact:
      row.contact_id === null
        ? null
        : {
            id: row.contact_id,
            email: row.email!,
            firstName: row.first_name,
            lastName: row.last_name,
            company: row.company,
            status: row.contact_status!,
            tags: row.tags ?? [],
            customFields: row.custom_fields ?? {},
            suppressed: row.suppressed,
          },
  }));
}

/** Epoch ms of the automation's earliest due run, or null (none, or the automation is not active). */
export async function nextDueRun(em: EntityManager, orgId: string, automationId: string): Promise<number | null> {
  const [row] = await em.execute<{ due_ms: number | null }[]>(
    `select extract(epoch from min(r.due_at)) * 1000 as due_ms
       from automation_runs r
      where r.automation_id = :automation and r.org_id = :org and r.status = 'active' and r.due_at is not null
        and exists (select 1 from automations a where a.id = :automation and a.org_id = :org and a.status = 'active')`,
    { automation: automationId, org: orgId },
  );
  return row?.due_ms === null || row?.due_ms === undefined ? null : Number(row.due_ms);
}

/** Open runs and when the next one falls due (null while the automation is not active). */
export async function automationQueueState(em: EntityManager, orgId: string, automationId: string): Promise<QueueState> {
  const [row] = await em.execute<{ open: number }[]>(
    `select count(*)::int as open from automation_runs where automation_id = ? and org_id = ? and status = 'active'`,
    [automationId, orgId],
  );
  return { open: row?.open ?? 0, next_due_ms: await nextDueRun(em, orgId, automationId) };
}

/** The workspace's credits for a batch: all its shards locked (in shard order) until the batch commits. */
export async function lockCredits(em: EntityManager, orgId: string): Promise<{ balance: number; overage: boolean }> {
  const [row] = await em.execute<{ balance: number; overage: boolean }[]>(
    `with locked as (select balance from credit_shards where org_id = ? order by shard for update)
     select coalesce((select sum(balance) from locked), 0)::int as balance,
            coalesce((select overage_enabled from organizations where id = ?), false) as overage`,
    [orgId, orgId],
  );
  return { balance: row?.balance ?? 0, overage: row?.overage ?? false };
}

/** Takes `count` credits (locked by lockCredits): from the balance, the rest as overage; what is left spread over the shards. */
export async function chargeCredits(em: EntityManager, orgId: string, count: number): Promise<void> {
  if (count === 0) return;
  await em.execute(
    `with v as (select ?::varchar as org, ?::int as count),
          locked as (select s.shard, s.balance from credit_shards s, v where s.org_id = v.org order by s.shard),
          total as (select coalesce(sum(balance), 0)::int as total, count(*)::int as n from locked),
          charge as (select least(t.total, v.count) as from_balance, t.total - least(t.total, v.count) as rest, t.n from total t, v),
          placed as (select shard, row_number() over (order by shard) - 1 as pos from locked)
     update credit_shards s
        set balance = ${spreadBalanceSql('k.rest', 'k.n', 'p.pos')},
            overage_used = s.overage_used + case when p.pos = 0 then v.count - k.from_balance else 0 end
       from charge k, placed p, v
      where s.org_id = v.org and s.shard = p.shard`,
    [orgId, count],
  );
}

/**
 * What the warm-up cap (the fixed one or the automatic step's, the lower) of the workspace's sending domain `domain` leaves of UTC day `day` (null
 * when it has no cap, or is not the workspace's: the render then fails the step), with the
 * domain row locked until the batch commits, so two automations' batches on one domain do not
 * both spend the same room. Sends accepted through the API or broadcast claims meanwhile are
 * counted on their own; the day may end up over the cap by what they add during one batch.
 */
export async function lockDomainRoom(em: EntityManager, orgId: string, domain: string, day: string): Promise<{ left: number | null }> {
  const [row] = await em.execute<{ cap: number | null; used: number }[]>(
    `with d as (select id, least(daily_cap, warmup_cap) as cap from domains where org_id = :org and domain = :domain for update)
     select d.cap,
            coalesce((select sum(c.count) from domain_daily_sends c where c.domain_id = d.id and c.org_id = :org and c.day = :day), 0)::int as used
       from d`,
    { org: orgId, domain, day },
  );
  if (!row || row.cap === null) return { left: null };
  return { left: Math.max(0, row.cap - row.used) };
}

/** Whether the contact is in the segment now: all, tag (its tags meet the segment's) or static (a member row). */
export async function isInSegment(em: EntityManager, orgId: string, contactId: string, tags: readonly string[], segmentId: string) {
  const [row] = await em.execute<{ member: boolean }[]>(
    `select (s.type = 'all' or (s.type = 'tag' and array(select jsonb_array_elements_text(:tags::jsonb)) && s.tags)
             or (s.type = 'static' and exists (select 1 from segment_members m where m.segment_id = s.id and m.contact_id = :contact and m.org_id = :org))) as member
       from segments s where s.id = :segment and s.org_id = :org`,
    { org: orgId, contact: contactId, segment: segmentId, tags: JSON.stringify(tags) },
  );
  return row?.member ?? false;
}

export async function emailHadEvent(em: EntityManager, orgId: string, emailId: string, kind: 'opened' | 'clicked'): Promise<boolean> {
  const [row] = await em.execute<{ had: boolean }[]>(
    `select exists (select 1 from email_events where org_id = ? and email_id = ? and type = ?) as had`,
    [orgId, emailId, kind],
  );
  return row?.had ?? false;
}

/** Whether the contact sent a custom event of this name (POST /api/v1/events). */
export async function contactHadEvent(em: EntityManager, orgId: string, contactId: string, name: string): Promise<boolean> {
  const [row] = await em.execute<{ had: boolean }[]>(
    `select exists (select 1 from contact_events where org_id = ? and contact_id = ? and name = ?) as had`,
    [orgId, contactId, name],
  );
  return row?.had ?? false;
}

export interface RenderedEmail {
  runId: string;
  stepId: string;
  emailId: string;
  domainId: string;
  domain: string;
  from: string;
  fromName: string | null;
  replyTo: string | null;
  to: string;
  contactId: string;
  subject: string;
  html: string;
  text: string | null;
  templateId: string;
  templateVersion: number;
  tracking: TrackingChoice;
  /** List-Unsubscribe (RFC 8058 one-click) when the server can sign links. */
  headers: Record<string, string>;
  /** Whether its credit is overage (the balance was used up), so a refund lowers overage instead. */
  overage?: boolean;
}

/**
 * Writes the batch's emails to their domains' queues (due now) with their recipient rows, one
 * per (run, step): an email written before for that step (a redone batch) is kept and its id
 * returned instead. Counts each written email against its domain's warm-up counter for the
 * day (shard 0, as a send accepted through the API is; a refund gives it back). NOTIFYs each
 * domain's drain. Returns (run, step) → the email id, and the domains whose drain is not running
 * (to wake after the commit).
 */
export async function writeEmails(
  em: EntityManager,
  orgId: string,
  emails: readonly RenderedEmail[],
): Promise<{ ids: Map<string, string>; idleDomains: string[] }> {
  if (emails.length === 0) return { ids: new Map(), idleDomains: [] };
  const rows = emails.map(({ tracking, ...e }) => ({ ...e, rid: newId(), trackOpens: tracking.opens, trackClicks: tracking.clicks }));
  const written = await em.execute<{ id: string; automation_run_id: string; automation_step_id: string }[]>(
    `with page as (
       select * from jsonb_to_recordset(:rows::jsonb) as r(
         "runId" text, "stepId" text, "emailId" text, rid text, "domainId" text, domain text, "from" text, "fromName" text,
         "replyTo" text, "to" text, "contactId" text, subject text, html text, text text, "templateId" text, "templateVersion" int,
         headers jsonb, overage boolean, "trackOpens" boolean, "trackClicks" boolean)
     ),
     written as (
       insert into transactional_emails (id, org_id, domain_id, domain, from_email, from_name, reply_to, subject, html, text, headers,
                                         template_id, template_version, message_id, status, next_attempt_at, quota_day, quota_shard,
                                         contact_id, automation_run_id, automation_step_id, credits_charged, overage_charged, size_bytes, stream, stream_kind,
                                         track_opens, track_clicks, created_at, updated_at)
       select p."emailId", :org, p."domainId", p.domain, p."from", p."fromName", p."replyTo", p.subject, p.html, p.text, p.headers,
              p."templateId", p."templateVersion", p."emailId" || '.0@' || p.domain, 'queued', now(), :day, 0,
              p."contactId", p."runId", p."stepId", case when p.overage then 0 else 1 end, case when p.overage then 1 else 0 end, octet_length(p.html) + coalesce(octet_length(p.text), 0),
              'broadcast', 'broadcast', p."trackOpens", p."trackClicks", now(), now()
         from page p
       on conflict (automation_run_id, automation_step_id) where automation_run_id is not null do nothing
       returning id, domain_id, automation_run_id, automation_step_id
     ),
     counted as (
       insert into domain_daily_sends (domain_id, day, shard, org_id, count)
       select w.domain_id, :day, 0, :org, count(*) from written w group by w.domain_id
       on conflict (domain_id, day, shard) do update set count = domain_daily_sends.count + excluded.count
       returning count
     ),
     recipients as (
       insert into email_recipients (id, org_id, email_id, kind, email, created_at, updated_at)
       select p.rid, :org, p."emailId", 'to', lower(p."to"), now(), now() from page p join written w on w.id = p."emailId"
       returning id
     )
     select w.id, w.automation_run_id, w.automation_step_id
       from written w, (select count(*) from recipients) as r, (select count(*) from counted) as c`,
    { org: orgId, rows: JSON.stringify(rows), day: utcDay(new Date()) },
  );
  const ids = new Map(written.map((row) => [`${row.automation_run_id}/${row.automation_step_id}`, row.id]));
  const missing = emails.filter((e) => !ids.has(`${e.runId}/${e.stepId}`));
  if (missing.length > 0) {
    // Written by an earlier try of this step: keep that email.
    const earlier = await em.execute<{ id: string; automation_run_id: string; automation_step_id: string }[]>(
      `select id, automation_run_id, automation_step_id from transactional_emails
        where org_id = ? and automation_run_id in (?) and automation_run_id is not null`,
      [orgId, missing.map((e) => e.runId)],
    );
    for (const row of earlier) ids.set(`${row.automation_run_id}/${row.automation_step_id}`, row.id);
  }
  const domainIds = [...new Set(emails.map((e) => e.domainId))];
  const idle = await em.execute<{ id: string }[]>(
    `select id from domains
      where org_id = ? and id in (?) and pg_notify(?, id) is not null and not coalesce(drain_lease_until > now(), false)`,
    [orgId, domainIds, SEND_WAKE_CHANNEL],
  );
  return { ids, idleDomains: idle.map((row) => row.id) };
}

export interface RunUpdate {
  id: string;
  status: string;
  stepId: string | null;
  dueAt: string | null;
  waitingFor: string | null;
  context: RunContext;
  exitReason: string | null;
  error: string | null;
}

/** The batch's runs as they are after their advance; ended runs get `ended_at`. */
export async function updateRuns(em: EntityManager, orgId: string, runs: readonly RunUpdate[]): Promise<void> {
  if (runs.length === 0) return;
  await em.execute(
    `update automation_runs r
        set status = u.status, step_id = u."stepId", due_at = u."dueAt", waiting_for = u."waitingFor", context = u.context,
            exit_reason = u."exitReason", error = left(u.error, 1000), lease_until = null, updated_at = now(),
            ended_at = case when u.status = 'active' then null else now() end
       from jsonb_to_recordset(?::jsonb) as u(id text, status text, "stepId" text, "dueAt" timestamptz, "waitingFor" text,
                                              context jsonb, "exitReason" text, error text)
      where r.id = u.id and r.org_id = ?`,
    [JSON.stringify(runs), orgId],
  );
}

export interface TimelineRow {
  runId: string;
  stepId: string;
  kind: string;
  outcome: string;
  detail: Record<string, unknown>;
}

export async function insertTimeline(em: EntityManager, orgId: string, entries: readonly TimelineRow[]): Promise<void> {
  if (entries.length === 0) return;
  // Ids in order, so a run's timeline reads back in the order its steps ran.
  const rows = entries.map((entry) => ({ ...entry, id: newId() }));
  await em.execute(
    `insert into automation_run_steps (id, org_id, run_id, step_id, kind, outcome, detail, created_at)
     select t.id, ?, t."runId", t."stepId", t.kind, t.outcome, t.detail, now()
       from jsonb_to_recordset(?::jsonb) as t(id text, "runId" text, "stepId" text, kind text, outcome text, detail jsonb)`,
    [orgId, JSON.stringify(rows)],
  );
}

/** Contacts' tags and custom fields as automation steps left them. */
export async function updateContacts(
  em: EntityManager,
  orgId: string,
  updates: readonly { id: string; tags: string[]; customFields: Record<string, unknown> }[],
): Promise<void> {
  if (updates.length === 0) return;
  await em.execute(
    `update contacts c
        set tags = array(select jsonb_array_elements_text(u.tags)), custom_fields = u."customFields", updated_at = now()
       from jsonb_to_recordset(?::jsonb) as u(id text, tags jsonb, "customFields" jsonb)
      where c.id = u.id and c.org_id = ?`,
    [JSON.stringify(updates), orgId],
  );
}

/** Static segment membership changes of the batch (a segment that is not static, or gone, is left alone); returns the members added. */
export async function changeSegments(
  em: EntityManager,
  orgId: string,
  adds: readonly { contactId: string; segmentId: string }[],
  removes: readonly { contactId: string; segmentId: string }[],
): Promise<{ segment_id: string; contact_id: string }[]> {
  let added: { segment_id: string; contact_id: string }[] = [];
  if (adds.length > 0) {
    added = await em.execute<{ segment_id: string; contact_id: string }[]>(
      `insert into segment_members (segment_id, contact_id, org_id, created_at)
       select a."segmentId", a."contactId", ?, now()
         from jsonb_to_recordset(?::jsonb) as a("segmentId" text, "contactId" text)
         join segments s on s.id = a."segmentId" and s.org_id = ? and s.type = 'static'
       on conflict do nothing
       returning segment_id, contact_id`,
      [orgId, JSON.stringify(adds), orgId],
    );
  }
  if (removes.length > 0) {
    await em.execute(
      `delete from segment_members m using jsonb_to_recordset(?::jsonb) as a("segmentId" text, "contactId" text)
        where m.segment_id = a."segmentId" and m.contact_id = a."contactId" and m.org_id = ?`,
      [JSON.stringify(removes), orgId],
    );
  }
  return added;
}

/** Events of the batch (webhook steps, runs that ended), into the outbox the webhook fan-out reads. */
export async function insertEvents(
  em: EntityManager,
  orgId: string,
  events: readonly { type: string; data: Record<string, unknown> }[],
): Promise<void> {
  if (events.length === 0) return;
  const rows = events.map((event) => ({ ...event, id: newId() }));
  await em.execute(
    `insert into events (id, org_id, type, api_version, data, created_at)
     select e.id, ?, e.type, '1.0.0', e.data, now() from jsonb_to_recordset(?::jsonb) as e(id text, type text, data jsonb)`,
    [orgId, JSON.stringify(rows)],
  );
}
