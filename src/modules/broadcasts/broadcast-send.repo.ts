/**
 * The statements of a broadcast's send: reading its audience a page at a time, writing a page
 * of messages to the sending domain's queue with the checkpoint, cancelling queued messages in
 * pages, and the live counters. Raw SQL is outside the tenant filter, so every statement names
 * the workspace itself; lists are bound as JSON (`jsonb_array_elements_text`, `jsonb_to_recordset`).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../../db/ids.ts';

export interface AudienceCursor {
  /** Contacts created after this instant (the send time) are not in the audience. */
  sendingAt: Date;
  afterAt: Date | null;
  afterId: string | null;
}

export interface AudienceMember {
  id: string;
  email: string;
  created_at: Date;
}

/**
 * Whether contact `c` is in the audience of the segments `:segments` (JSON) of workspace `:org`
 * at `:sendingAt`: created by then, in at least one of the segments (a static segment's members
 * added by then), active and not on the suppression list for every stream or for the
 * broadcast's stream `:stream`.
 */
const AUDIENCE_MEMBER = `c.org_id = :org and c.created_at <= :sendingAt::timestamptz
        and c.status = 'active'
        and exists (select 1 from segments s
                     where s.org_id = :org and s.id in (select jsonb_array_elements_text(:segments::jsonb))
                       and (s.type = 'all'
                            or (s.type = 'tag' and c.tags && s.tags)
                            or (s.type = 'static' and exists (select 1 from segment_members m
                                                               where m.segment_id = s.id and m.contact_id = c.id and m.org_id = :org
                                                                 and m.created_at <= :sendingAt::timestamptz))))
        and not exists (select 1 from suppressions x where x.org_id = :org and x.email = c.email and x.stream in ('', :stream))`;

/**
 * How many contacts a broadcast to `segmentIds` would reach if it were sent at `at` (the
 * launch's confirmation; the send itself takes the audience again at its send time).
 */
export async function countAudience(
  em: EntityManager,
  orgId: string,
  segmentIds: readonly string[],
  at: Date,
  stream = 'broadcast',
): Promise<number> {
  if (segmentIds.length === 0) return 0;
  const [row] = await em.execute<{ n: number }[]>(
    `/* workspace: the condition AUDIENCE_MEMBER names the org */ select count(*)::int as n from contacts c where ${AUDIENCE_MEMBER}`,
    { org: orgId, sendingAt: at, segments: JSON.stringify(segmentIds), stream },
  );
  return row?.n ?? 0;
}

/**
 * The next page of a broadcast's audience, on the contacts' (created_at, id) order (the
 * (org_id, created_at, id) index): contacts of the workspace created by the send time, in at
 * least one of the segments (a static segment's members added by then), active and not on the
 * suppression list. One row per contact, so a contact in several segments is mailed once.
 */
export async function readAudiencePage(
  em: EntityManager,
  orgId: string,
  audience: { segmentIds: readonly string[]; stream: string },
  cursor: AudienceCursor,
  limit: number,
): Promise<AudienceMember[]> {
  return em.execute<AudienceMember[]>(
    `/* workspace: the condition AUDIENCE_MEMBER names the org */
     select c.id, c.email, c.created_at
       from contacts c
      where ${AUDIENCE_MEMBER}
        and (c.created_at, c.id) > (:afterAt::timestamptz, :afterId::varchar)
      order by c.created_at, c.id
      limit :limit`,
    {
      org: orgId,
      sendingAt: cursor.sendingAt,
      afterAt: cursor.afterAt ?? new Date(0),
      afterId: cursor.afterId ?? '',
      segments: JSON.stringify(audience.segmentIds),
      stream: audience.stream,
      limit,
    },
  );
}

/** What a broadcast's messages are sent as (fixed at launch). */
export interface BroadcastSender {
  orgId: string;
  broadcastId: string;
  domainId: string;
  domain: string;
  fromEmail: string;
  fromName: string;
  replyTo: string | null;
  subject: string;
  /** The broadcast's message stream (kind broadcast), copied to each message. */
  stream: string;
}

/**
 * Writes one message per member to the domain's queue (due now; subject, bodies and headers are
 * rendered at the contact's turn) with its recipient row, and moves the checkpoint past the
 * page, in one statement, only while the broadcast is sending. A page written before (a retried
 * activity) adds nothing: (broadcast_id, contact_id) is unique. Returns how many were written,
 * or null when the broadcast is no longer sending.
 */
export async function writeAudiencePage(
  em: EntityManager,
  sender: BroadcastSender,
  members: readonly AudienceMember[],
): Promise<number | null> {
  const last = members.at(-1);
  if (!last) return 0;
  const rows = members.map((member) => ({ id: newId(), rid: newId(), contact_id: member.id, email: member.email }));
  const [result] = await em.execute<{ written: number }[]>(
    `with live as (
       select id, sandbox, track_opens, track_clicks from broadcasts where id = :broadcast and org_id = :org and status = 'sending' for update
     ),
     page as (
       select r.* from jsonb_to_recordset(:rows::jsonb) as r(id text, rid text, contact_id text, email text), live
     ),
     written as (
       insert into transactional_emails (id, org_id, domain_id, domain, from_email, from_name, reply_to, subject, message_id, status,
                                         next_attempt_at, quota_day, quota_shard, broadcast_id, contact_id, sandbox, stream, stream_kind,
                                         track_opens, track_clicks, created_at, updated_at)
       select p.id, :org, :domainId, :domain, :fromEmail, :fromName, :replyTo, :subject, p.id || '.0@' || :domain, 'queued',
              now(), '', 0, :broadcast, p.contact_id, live.sandbox, :stream, 'broadcast', live.track_opens, live.track_clicks, now(), now()
         from page p, live
       on conflict (broadcast_id, contact_id) where broadcast_id is not null do nothing
       returning id
     ),
     recipients as (
       insert into email_recipients (id, org_id, email_id, kind, email, created_at, updated_at)
       select p.rid, :org, p.id, 'to', p.email, now(), now() from page p join written w on w.id = p.id
       returning id
     )
     update broadcasts b
        set audience_after_at = :afterAt::timestamptz, audience_after_id = :afterId,
            recipient_count = b.recipient_count + (select count(*) from written), updated_at = now()
       from live
      where b.id = live.id and b.org_id = :org
     returning (select count(*) from recipients)::int as written`,
    {
      broadcast: sender.broadcastId,
      org: sender.orgId,
      rows: JSON.stringify(rows),
      domainId: sender.domainId,
      domain: sender.domain,
      fromEmail: sender.fromEmail,
      fromName: sender.fromName,
      replyTo: sender.replyTo,
      subject: sender.subject,
      stream: sender.stream,
      afterAt: last.created_at,
      afterId: last.id,
    },
  );
  return result ? result.written : null;
}

/**
 * Cancels up to `limit` of a cancelled broadcast's messages not yet taken by the drain (status
 * queued) with their recipients; returns how many. Messages being sent finish their attempt.
 */
export async function cancelQueuedMessages(em: EntityManager, orgId: string, broadcastId: string, limit: number): Promise<number> {
  const [row] = await em.execute<{ cancelled: number }[]>(
    `with picked as (
       select id from transactional_emails
        where broadcast_id = :broadcast and org_id = :org and status = 'queued'
        limit :limit for update skip locked
     ),
     emails as (
       update transactional_emails e
          set status = 'cancelled', cancelled_at = now(), settled_at = now(), next_attempt_at = null,
              last_error = 'broadcast cancelled', updated_at = now()
         from picked where e.id = picked.id
       returning e.id
     ),
     recipients as (
       update email_recipients r set status = 'cancelled', last_response = 'broadcast cancelled', updated_at = now()
         from emails where r.email_id = emails.id and r.org_id = :org and r.status in ('queued', 'deferred')
       returning r.id
     )
     select (select count(*) from emails)::int as cancelled, (select count(*) from recipients)::int as recipients`,
    { broadcast: broadcastId, org: orgId, limit },
  );
  return row?.cancelled ?? 0;
}

/**
 * Whether any message of the broadcast is still on its domain's queue (queued, being sent or
 * waiting for a retry): read on the domain's partial due index, which holds open broadcast
 * messages only, so the look costs the same at the end of a 100,000-recipient send as at its start.
 */
export async function hasOpenMessages(em: EntityManager, orgId: string, broadcastId: string, domainId: string): Promise<boolean> {
  const [row] = await em.execute<{ open: boolean }[]>(
    `select exists (select 1 from transactional_emails
                     where domain_id = :domain and broadcast_id = :broadcast and org_id = :org
                       and status in ('scheduled', 'queued', 'sending') and broadcast_id is not null) as open`,
    { broadcast: broadcastId, org: orgId, domain: domainId },
  );
  return row?.open ?? false;
}

/** The event counters (sent, delivered, bounced, …) of some broadcasts of a workspace, from the daily rollup. */
export async function countBroadcastEvents(
  em: EntityManager,
  orgId: string,
  broadcastIds: readonly string[],
): Promise<Map<string, Record<string, number>>> {
  const counts = new Map<string, Record<string, number>>();
  if (broadcastIds.length === 0) return counts;
  const rows = await em.execute<{ broadcast_id: string; type: string; count: number }[]>(
    `select broadcast_id, type, sum(count)::int as count
       from email_event_counts
      where org_id = :org and broadcast_id in (select jsonb_array_elements_text(:ids::jsonb))
      group by broadcast_id, type`,
    { org: orgId, ids: JSON.stringify(broadcastIds) },
  );
  for (const row of rows) counts.set(row.broadcast_id, { ...counts.get(row.broadcast_id), [row.type]: row.count });
  return counts;
}

/** NOTIFYs the domain's running drain (new messages are due); false when no drain holds the lease (its actor must be woken). */
export async function notifyDomainDrain(em: EntityManager, orgId: string, domainId: string, channel: string): Promise<boolean> {
  const [row] = await em.execute<{ draining: boolean }[]>(
    `select pg_notify(:channel, id) is null as notified, coalesce(drain_lease_until > now(), false) as draining
       from domains where id = :domain and org_id = :org`,
    { channel, domain: domainId, org: orgId },
  );
  return row?.draining ?? false;
}
