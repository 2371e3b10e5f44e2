/**
 * The send queue of a domain: transactional_emails rows of one sending domain, due at
 * `next_attempt_at` (acceptance, `scheduled_at`, a deferral's retry time, or the lapse of an
 * attempt's lease), claimed by the domain actor's drain with `FOR UPDATE SKIP LOCKED`; and the
 * domain's drain lease. A broadcast's messages are rows of the same queue (`broadcast_id` set)
 * on an index of their own: a claim takes due emails of transactional-kind streams first (an
 * index of their own too), then automation and broadcast-stream emails, and fills the rest of
 * its room with broadcast messages, as far as the domain's warm-up cap for the day allows
 * (a broadcast message counts against the cap when first claimed) and not while the domain is
 * paused (DNS attention, reputation recovery, the workspace's reputation policy). A workspace
 * paused by its reputation policy holds its automation and broadcast-stream mail too; mail of
 * transactional-kind streams always goes. Raw SQL is outside the tenant filter, so every
 * statement names the workspace itself.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { EmailAttachmentRecord } from '../../../db/entities/index.ts';
import type { BroadcastContent } from '../broadcasts/broadcast-message.ts';
import type { TrackingChoice } from '../tracking/tracking.fns.ts';
import type { ClaimedSend, SendRecipient } from './delivery.ts';
import { BY_EMAIL_ID } from './sent-record.repo.ts';
import { utcDay } from '../sends/sends.fns.ts';
import { queryPrepared } from '../../../db/prepared.ts';

const OPEN = `status in ('scheduled', 'queued', 'sending')`;
/**
 * The queue in three parts that share no row, each on its own partial index (a row in two of
 * them was written into both at acceptance and again at each claim): mail of a
 * transactional-kind stream (transactional_emails_priority_due_index), the rest of what is sent
 * one by one (transactional_emails_due_index), and broadcast messages (_broadcast_due_index).
 * A statement names one part's condition exactly as its index does, so the planner uses it.
 */
const TRANSACTIONAL = `${OPEN} and broadcast_id is null`;
/** Mail of a transactional-kind stream, claimed before automation and broadcast-stream mail. */
const PRIORITY = `${TRANSACTIONAL} and stream_kind = 'transactional'`;
const BROADCAST = `${OPEN} and broadcast_id is not null`;

/** Of the rest, mail of a broadcast-kind stream sent one by one (automations, sends naming such a stream): held by a workspace reputation pause. */
const STREAM_BULK = `${TRANSACTIONAL} and stream_kind <> 'transactional'`;

/**
 * Whether the workspace `org` (an SQL expression) has its sending paused by its reputation
 * policy (src/modules/reputation): its broadcast messages and its broadcast-kind stream mail wait;
 * mail of transactional-kind streams goes on, whatever the pause's scope (`all` refuses new sends).
 */
const workspacePaused = (org: string) =>
  `exists (select 1 from organizations o where o.id = ${org} and o.reputation_paused_at is not null)`;

/** How often a paused domain's broadcast messages are looked at again. */
const PAUSED_RECHECK_SECONDS = 60;

/**
 * Whether domain `d` is paused for broadcast messages: DNS attention, reputation recovery, or
 * its workspace's reputation policy (src/modules/reputation) holding its sending paused.
 */
const PAUSED = `(d.status = 'attention' or d.reputation_state = 'recovery' or ${workspacePaused('d.org_id')})`;
/**
 * The cap of domain `d` for broadcast messages: the lower of the operator's fixed cap and the
 * cap of its automatic warm-up step (src/modules/warmup); null when it has neither.
 */
const CAP = `least(d.daily_cap, d.warmup_cap)`;
/** How many broadcast messages domain `d` has handed off on UTC day `:day`, against its warm-up cap. */
const SENT_TODAY = `coalesce((select sum(c.count) from domain_daily_sends c where c.domain_id = d.id /* workspace: the domain's */ and c.day = :day), 0)`;

/**
 * How many broadcast messages the domain may hand off now (CTE `room`, column n): none while
 * it is paused, otherwise what its warm-up cap leaves of the day (all of :limit when uncapped).
 * `paused` and `capped_out` say why there is none, for the next-due time.
 */
const ROOM_CTE = `
    room as (
      select case when ${PAUSED} then 0
                  when ${CAP} is null then :limit::int
                  else greatest(0, ${CAP} - ${SENT_TODAY})::int end as n,
             ${PAUSED} as paused
        from domains d where d.id = :domain and d.org_id = :org
    )`;

/**
 * When the domain's earliest broadcast message can next be taken: its due time, but not before
 * the next UTC day when the cap is used up, nor before a minute from now while paused.
 */
const BROADCAST_NEXT_DUE = `
    (select case when r.paused then greatest(m.at, now() + make_interval(secs => ${PAUSED_RECHECK_SECONDS}))
                 when r.n <= 0 then greatest(m.at, (:day::date + 1)::timestamp at time zone 'UTC')
                 else m.at end
       from (select min(next_attempt_at) as at from transactional_emails
              where domain_id = :domain and org_id = :org and ${BROADCAST}) m, room r)`;

/**
 * When the domain's earliest mail other than broadcast messages can next be taken: its due time,
 * but broadcast-kind stream mail not before a minute from now while its workspace is paused.
 */
const ONE_BY_ONE_NEXT_DUE = `
    least((select min(next_attempt_at) from transactional_emails where domain_id = :domain and org_id = :org and ${PRIORITY}),
          (select case when m.at is not null and ${workspacePaused(':org')}
                       then greatest(m.at, now() + make_interval(secs => ${PAUSED_RECHECK_SECONDS})) else m.at end
             from (select min(next_attempt_at) as at from transactional_emails
                    where domain_id = :domain and org_id = :org and ${STREAM_BULK}) m))`;

/** A claimed email: the attempt's input (status sending, this attempt counted) and its place on the queue. */
export interface ClaimedEmail extends ClaimedSend {
  /** When the first attempt began (this claim's time for a first attempt), epoch ms. */
  firstAttemptMs: number;
  /** When it fell due (acceptance, scheduled_at, a retry time), epoch ms. */
  dueMs: number;
  /** A broadcast's message: what it is rendered from (the broadcast, the contact as it is now). */
  broadcast: BroadcastContent | null;
  /** Its open pixel and tracked links, and the domain's verified tracking host (null: PUBLIC_URL). */
  tracking: TrackingChoice;
  trackingHost: string | null;
  /** Its place on the queue's order, for the next claim's cursor. */
  cursor: QueueCursor;
}

interface ClaimedRow {
  id: string;
  org_id: string;
  domain_id: string;
  domain: string;
  from_email: string;
  from_name: string | null;
  reply_to: string | null;
  subject: string;
  html: string | null;
  text: string | null;
  headers: Record<string, string>;
  attachments: EmailAttachmentRecord[];
  message_id: string;
  scheduled_ms: number | null;
  created_ms: number;
  handoff_attempts: number;
  first_attempt_ms: number;
  due_ms: number;
  recipients: SendRecipient[];
  broadcast_id: string | null;
  sandbox: boolean;
  stream: string;
  broadcast: Omit<BroadcastContent, 'tracking'> | null;
  due_at_text: string;
  track_opens: boolean;
  track_clicks: boolean;
  tracking_host: string | null;
}

/**
 * Where a drain's last claim of broadcast messages ended, on the due index's order: the next
 * claim starts after it instead of walking again over the index entries that the rows already
 * claimed left behind (dead until vacuum; at 50,000 claimed, a 20-row claim took 120 ms). Safe
 * within a drain because a row's `next_attempt_at` only ever moves forward (a lease, a retry
 * time), so nothing due can fall behind the cursor; a row skipped while locked is found by the
 * next drain, which starts without a cursor.
 */
export interface QueueCursor {
  /** The due time as PostgreSQL wrote it (microseconds kept). */
  dueAt: string;
  id: string;
}

function toClaimed(row: ClaimedRow): ClaimedEmail {
  return {
    id: row.id,
    orgId: row.org_id,
    domainId: row.domain_id,
    domain: row.domain,
    fromEmail: row.from_email,
    fromName: row.from_name,
    replyTo: row.reply_to,
    subject: row.subject,
    html: row.html,
    text: row.text,
    headers: row.headers,
    attachments: row.attachments,
    messageId: row.message_id,
    scheduledAt: row.scheduled_ms === null ? null : new Date(row.scheduled_ms),
    createdAt: new Date(row.created_ms),
    handoffAttempts: row.handoff_attempts,
    recipients: row.recipients,
    firstAttemptMs: row.first_attempt_ms,
    dueMs: row.due_ms,
    broadcastId: row.broadcast_id,
    sandbox: row.sandbox,
    stream: row.stream,
    broadcast: row.broadcast && { ...row.broadcast, tracking: { opens: row.track_opens, clicks: row.track_clicks } },
    tracking: { opens: row.track_opens, clicks: row.track_clicks },
    trackingHost: row.tracking_host,
    cursor: { dueAt: row.due_at_text, id: row.id },
  };
}

export function createDomainQueue(orm: MikroORM) {
  const db = () => orm.em.getConnection();

  return {
    /** Marks the domain's drain as running until `seconds` from now; false when the domain is gone. */
    async leaseDomain(orgId: string, domainId: string, seconds: number): Promise<boolean> {
      const rows = await db().execute<{ id: string }[]>(
        `update domains set drain_lease_until = now() + make_interval(secs => ?) where id = ? and org_id = ? returning id`,
        [seconds, domainId, orgId],
      );
      return rows.length > 0;
    },

    async releaseDomain(orgId: string, domainId: string): Promise<void> {
      await db().execute(`update domains set drain_lease_until = null where id = ? and org_id = ?`, [domainId, orgId], 'run');
    },

    /**
     * Claims up to `limit` due emails (mail of transactional-kind streams first, then automation
     * and broadcast-stream mail sent one by one, then broadcast messages within the domain's
     * room; oldest due first within each) and starts an attempt on each (status
     * sending, the attempt counted), returning what the attempt needs, recipients included (and
     * for a broadcast message its content and contact), in one statement. A broadcast message's
     * first claim (no `quota_day` yet) counts it against the day's warm-up counter (shard 0) and
     * records the day, so a release gives it back there, and a claim whose attempt is given back
     * (`hold`) does not count it twice. Each becomes due again at the end of its lease unless the
     * attempt records a new time, so a dead worker's email is taken again.
     *
     * A prepared statement of each pooled connection (queryPrepared): planning this statement
     * took about three times as long as running it for a claim of a few emails.
     *
     * The claim commits without waiting for its WAL flush (synchronous_commit off for this
     * statement's transaction): a claim lost in a database crash only puts its emails back on the
     * queue as they were, and the record of an attempt (a synchronous commit, later in the WAL)
     * can never survive without the claim before it.
     */
    async claim(
      orgId: string,
      domainId: string,
      limit: number,
      leaseSeconds: number,
      cursor: QueueCursor | null = null,
    ): Promise<ClaimedEmail[]> {
      const rows = await queryPrepared<ClaimedRow>(orm.em, {
        sql: `with no_fsync as (select set_config('synchronous_commit', 'off', true) as setting),
         p as (
           select id, next_attempt_at as due_at from transactional_emails
            where domain_id = :domain and org_id = :org and ${PRIORITY} and next_attempt_at <= now()
            order by next_attempt_at, id
            limit :limit for update skip locked
         ),
         q as (
           select id, next_attempt_at as due_at from transactional_emails
            where domain_id = :domain and org_id = :org and ${STREAM_BULK} and next_attempt_at <= now() and not ${workspacePaused(':org')}
            order by next_attempt_at, id
            limit greatest(0, :limit - (select count(*) from p)) for update skip locked
         ),
         t as (select id, due_at, false as fresh from p union all select id, due_at, false from q),${ROOM_CTE},
         b as (
           select id, next_attempt_at as due_at, quota_day = '' as fresh from transactional_emails
            where domain_id = :domain and org_id = :org and ${BROADCAST} and next_attempt_at <= now()
              and (next_attempt_at, id) > (:afterAt::timestamptz, :afterId::varchar)
            order by next_attempt_at, id
            limit greatest(0, least(:limit - (select count(*) from t), (select n from room)))
            for update skip locked
         ),
         due as (select id, due_at, fresh from t union all select id, due_at, fresh from b),
         claimed as (
           update transactional_emails e
              set next_attempt_at = now() + make_interval(secs => :lease), first_attempt_at = coalesce(e.first_attempt_at, now()),
                  status = 'sending', handoff_attempts = e.handoff_attempts + 1, updated_at = now(),
                  quota_day = case when due.fresh then :day else e.quota_day end
             from due
            where e.id = due.id
           returning e.*, due.due_at, due.fresh
         ),
         counted as (
           insert into domain_daily_sends (domain_id, day, shard, org_id, count)
           select :domain, :day, 0, :org, count(*) from claimed where fresh having count(*) > 0
           on conflict (domain_id, day, shard) do update set count = domain_daily_sends.count + excluded.count
           returning count
         )
         select e.id, e.org_id, e.domain_id, e.domain, e.from_email, e.from_name, e.reply_to, e.subject, e.html, e.text,
                e.headers, e.attachments, e.message_id, e.handoff_attempts, e.broadcast_id, e.sandbox, e.stream, e.track_opens, e.track_clicks,
                (select d.tracking_host from domains d where d.id = e.domain_id and d.org_id = e.org_id and d.tracking_verified_at is not null) as tracking_host,
                (extract(epoch from e.scheduled_at) * 1000)::float8 as scheduled_ms,
                (extract(epoch from e.created_at) * 1000)::float8 as created_ms,
                (extract(epoch from e.first_attempt_at) * 1000)::float8 as first_attempt_ms,
                (extract(epoch from e.due_at) * 1000)::float8 as due_ms, e.due_at::text as due_at_text,
                (select json_agg(json_build_object('id', r.id, 'email', r.email, 'kind', r.kind, 'status', r.status) order by r.id)
                   from email_recipients r where r.email_id = e.id /* workspace: ${BY_EMAIL_ID} */) as recipients,
                case when e.broadcast_id is null then null else (
                  select json_build_object(
                           'broadcastId', bc.id, 'status', bc.status, 'subject', bc.subject, 'html', bc.html, 'plainText', bc.plain_text,
                           'previewText', bc.preview_text, 'postalAddress', o.postal_address,
                           'contact', (select json_build_object('id', c.id, 'email', c.email, 'firstName', c.first_name, 'lastName', c.last_name,
                                                                'company', c.company, 'customFields', c.custom_fields, 'status', c.status,
                                                                'suppressed', exists (select 1 from suppressions x where x.org_id = c.org_id and x.email = c.email and x.stream in ('', e.stream)))
                                         from contacts c where c.id = e.contact_id and c.org_id = e.org_id))
                    from broadcasts bc join organizations o on o.id = bc.org_id
                   where bc.id = e.broadcast_id and bc.org_id = e.org_id) end as broadcast,
                (select count(*) from counted)::int as counted
           from claimed e, no_fsync
          order by e.broadcast_id nulls first, e.stream_kind desc, e.due_at, e.id`,
        params: {
          lease: leaseSeconds,
          domain: domainId,
          org: orgId,
          limit,
          day: utcDay(new Date()),
          afterAt: cursor?.dueAt ?? '-infinity',
          afterId: cursor?.id ?? '',
        },
      });
      return rows.map(toClaimed);
    },

    /**
     * Extends the leases of the emails whose attempts are still running. Rows locked at this
     * moment are being settled (the sent recorder's group commit updates many of them in one
     * statement, in its own order): they are skipped rather than waited for, so the two never
     * deadlock; a settled email needs no lease, and one that is not is extended at the next beat.
     */
    async extendLeases(orgId: string, ids: readonly string[], leaseSeconds: number): Promise<void> {
      if (ids.length === 0) return;
      await db().execute(
        `update transactional_emails set next_attempt_at = now() + make_interval(secs => ?)
          where id in (select id from transactional_emails where id in (?) and org_id = ? and ${OPEN} for update skip locked)`,
        [leaseSeconds, [...ids], orgId],
        'run',
      );
    },

    /** After an attempt: due again at `at` (deferred recipients remain), or off the queue (null: settled). */
    async reschedule(orgId: string, id: string, at: Date | null): Promise<void> {
      await db().execute(`update transactional_emails set next_attempt_at = ? where id = ? and org_id = ?`, [at, id, orgId], 'run');
    },

    /**
     * An email claimed but not attempted (held by its egress pool or its destination's shaping):
     * due again at `at`, and the claim's attempt given back, so its retry schedule does not move on.
     */
    async hold(orgId: string, id: string, at: Date): Promise<void> {
      await db().execute(
        `update transactional_emails set next_attempt_at = ?, handoff_attempts = greatest(0, handoff_attempts - 1) where id = ? and org_id = ?`,
        [at, id, orgId],
        'run',
      );
    },

    /** Epoch ms when the domain's next email falls due (held mail no earlier than it may be taken), or null. */
    async nextDue(orgId: string, domainId: string): Promise<number | null> {
      // Prepared, as the claim: a drain asks after each claim that found the queue empty.
      const [row] = await queryPrepared<{ next_due_ms: number | null }>(orm.em, {
        sql: `with ${ROOM_CTE}
         select (extract(epoch from least(
                   ${ONE_BY_ONE_NEXT_DUE},
                   ${BROADCAST_NEXT_DUE})) * 1000)::float8 as next_due_ms`,
        params: { domain: domainId, org: orgId, limit: 1, day: utcDay(new Date()) },
      });
      return row?.next_due_ms ?? null;
    },

    /** The domain's open emails (broadcast messages included) and when the next one falls due. */
    async state(orgId: string, domainId: string): Promise<{ next_due_ms: number | null; open: number }> {
      const [row] = await db().execute<{ next_due_ms: number | null; open: number }[]>(
        `with ${ROOM_CTE}
         select (extract(epoch from least(
                   ${ONE_BY_ONE_NEXT_DUE},
                   ${BROADCAST_NEXT_DUE})) * 1000)::float8 as next_due_ms,
                ((select count(*) from transactional_emails where domain_id = :domain and org_id = :org and ${PRIORITY})
                 + (select count(*) from transactional_emails where domain_id = :domain and org_id = :org and ${STREAM_BULK})
                 + (select count(*) from transactional_emails where domain_id = :domain and org_id = :org and ${BROADCAST}))::int as open`,
        { domain: domainId, org: orgId, limit: 1, day: utcDay(new Date()) },
      );
      return row ?? { next_due_ms: null, open: 0 };
    },

    /**
     * Domains with emails due for longer than `marginMs` and no drain running (the reconciler's
     * look). Broadcast messages count only where the domain may take them now: a paused domain,
     * or one whose warm-up cap for the day is used up, has its actor asleep until then on purpose;
     * likewise broadcast-kind stream mail while its workspace is paused.
     */
    async findStranded(marginMs: number, limit: number): Promise<{ id: string; org_id: string }[]> {
      return db().execute<{ id: string; org_id: string }[]>(
        `/* all workspaces: the send reconciler's look for stranded domains */
         select s.domain_id as id, s.org_id
           from (select domain_id, org_id from transactional_emails
                  where ${PRIORITY} and next_attempt_at < now() - make_interval(secs => :margin)
                 union
                 select e.domain_id, e.org_id from transactional_emails e
                  where ${STREAM_BULK} and next_attempt_at < now() - make_interval(secs => :margin)
                    and not ${workspacePaused('e.org_id')}
                 union
                 select domain_id, org_id from transactional_emails
                  where ${BROADCAST} and next_attempt_at < now() - make_interval(secs => :margin)
                    and domain_id in (select d.id from domains d
                                       where not ${PAUSED} and (${CAP} is null or ${CAP} > ${SENT_TODAY}))) s
           join domains d on d.id = s.domain_id and d.org_id = s.org_id
          where d.drain_lease_until is null or d.drain_lease_until < now()
          order by s.domain_id
          limit :limit`,
        { margin: marginMs / 1000, day: utcDay(new Date()), limit },
      );
    },
  };
}

export type DomainQueue = ReturnType<typeof createDomainQueue>;
