/**
 * The retention loop's deletions (retention.ts). Each function deletes one batch: it picks at
 * most `batchSize` rows created before `beforeId` (ids are time-ordered, so the primary key
 * serves the age condition on every table) that are settled, locks them FOR UPDATE SKIP LOCKED
 * (rows a writer holds are left for the next pass) and deletes them with the rows that belong
 * to them, in one statement. Every workspace's rows are reached: retention is platform work.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

/** What one batch removed: rows of its main table, and the blobs that now belong to nothing. */
export interface BatchResult {
  deleted: number;
  blobKeys: string[];
}

const counted = async (em: EntityManager, sql: string, params: unknown[]): Promise<BatchResult> => {
  const [row] = await em.execute<{ deleted: number }[]>(sql, params);
  return { deleted: row?.deleted ?? 0, blobKeys: [] };
};

/** Settled emails (sent, failed, cancelled: nothing left to attempt) with their recipients, email events and open/click hits. */
export function deleteSettledEmails(em: EntityManager, beforeId: string, batchSize: number): Promise<BatchResult> {
  return counted(
    em,
    `/* all workspaces: retention of settled emails */
     with doomed as (
       select id, org_id from transactional_emails
        where id < ? and status in ('sent', 'failed', 'cancelled') and next_attempt_at is null
        order by id limit ? for update skip locked),
     recipients as (delete from email_recipients r using doomed where r.email_id = doomed.id),
     facts as (delete from email_events x using doomed where x.org_id = doomed.org_id and x.email_id = doomed.id),
     hits as (delete from tracking_hits h using doomed where h.email_id = doomed.id),
     gone as (delete from transactional_emails e using doomed where e.id = doomed.id returning 1)
     select count(*)::int as deleted from gone`,
    [beforeId, batchSize],
  );
}

/** Email events whose email is gone (or that have none); the events of an email still kept stay with it. */
export function deleteOrphanEmailEvents(em: EntityManager, beforeId: string, batchSize: number): Promise<BatchResult> {
  return counted(
    em,
    `/* all workspaces: retention of email events */
     with doomed as (
       select x.id from email_events x
        where x.id < ? and (x.email_id is null or not exists (select 1 from transactional_emails e where e.id = x.email_id))
        order by x.id limit ? for update of x skip locked),
     gone as (delete from email_events x using doomed where x.id = doomed.id returning 1)
     select count(*)::int as deleted from gone`,
    [beforeId, batchSize],
  );
}

/** Settled webhook deliveries (delivered or exhausted; a failed one is waiting for its retry) with their attempts. */
export function deleteSettledDeliveries(em: EntityManager, beforeId: string, batchSize: number): Promise<BatchResult> {
  return counted(
    em,
    `/* all workspaces: retention of webhook deliveries */
     with doomed as (
       select id from webhook_deliveries
        where id < ? and status in ('delivered', 'exhausted')
        order by id limit ? for update skip locked),
     attempts as (delete from webhook_attempts a using doomed where a.delivery_id = doomed.id),
     gone as (delete from webhook_deliveries d using doomed where d.id = doomed.id returning 1)
     select count(*)::int as deleted from gone`,
    [beforeId, batchSize],
  );
}

/** Events fanned out whose deliveries are all gone (a delivery kept keeps its event, for replays). */
export function deleteDeliveredEvents(em: EntityManager, beforeId: string, batchSize: number): Promise<BatchResult> {
  return counted(
    em,
    `/* all workspaces: retention of the events outbox */
     with doomed as (
       select e.id from events e
        where e.id < ? and e.fanned_out_at is not null
          and not exists (select 1 from webhook_deliveries d where d.event_id = e.id)
        order by e.id limit ? for update of e skip locked),
     gone as (delete from events e using doomed where e.id = doomed.id returning 1)
     select count(*)::int as deleted from gone`,
    [beforeId, batchSize],
  );
}

/**
 * Inbox messages (inbound and outbound; not those whose attachments are still being stored)
 * with their attachments; their threads count them no more, and threads left empty go too.
 */
export async function deleteInboxMessages(em: EntityManager, beforeId: string, batchSize: number): Promise<BatchResult> {
  const [row] = await em.execute<{ deleted: number; blob_keys: string[]; empty_threads: string[] }[]>(
    `/* all workspaces: retention of inbox messages */
     with doomed as (
       select id, org_id, thread_id from inbox_messages
        where id < ? and attachment_ingest_status <> 'pending'
        order by id limit ? for update skip locked),
     files as (delete from inbox_attachments a using doomed where a.org_id = doomed.org_id and a.message_id = doomed.id returning a.blob_key),
     gone as (delete from inbox_messages m using doomed where m.id = doomed.id returning m.org_id, m.thread_id),
     threads as (
       update inbox_threads t set message_count = greatest(t.message_count - g.n, 0), updated_at = now()
         from (select org_id, thread_id, count(*)::int as n from gone group by org_id, thread_id) g
        where t.id = g.thread_id and t.org_id = g.org_id
        returning t.id, t.message_count)
     select (select count(*)::int from gone) as deleted,
            coalesce((select json_agg(blob_key) from files where blob_key is not null), '[]') as blob_keys,
            coalesce((select json_agg(id) from threads where message_count = 0), '[]') as empty_threads`,
    [beforeId, batchSize],
  );
  const emptyThreads = row?.empty_threads ?? [];
  if (emptyThreads.length > 0) {
    await em.execute(
      `/* all workspaces: threads the statement before emptied, by id */
       delete from inbox_threads where id in (select jsonb_array_elements_text(?::jsonb)) and message_count = 0`,
      [JSON.stringify(emptyThreads)],
      'run',
    );
  }
  return { deleted: row?.deleted ?? 0, blobKeys: row?.blob_keys ?? [] };
}

/** Inbound messages ingested or failed, with their raw bytes where still kept (inbound messages belong to no workspace). */
export async function deleteInboundMessages(em: EntityManager, beforeId: string, batchSize: number): Promise<BatchResult> {
  const rows = await em.execute<{ blob_key: string; has_raw: boolean }[]>(
    `with doomed as (
       select id from inbound_messages
        where id < ? and status in ('ingested', 'failed')
        order by id limit ? for update skip locked)
     delete from inbound_messages m using doomed where m.id = doomed.id
     returning m.blob_key, m.raw_deleted_at is null as has_raw`,
    [beforeId, batchSize],
  );
  return { deleted: rows.length, blobKeys: rows.filter((row) => row.has_raw).map((row) => row.blob_key) };
}

/** Finished contact imports (completed or failed) with their error report rows, their contacts' timeline rows and their file. */
export async function deleteFinishedImports(em: EntityManager, beforeId: string, batchSize: number): Promise<BatchResult> {
  const rows = await em.execute<{ blob_key: string | null }[]>(
    `/* all workspaces: retention of contact imports */
     with doomed as (
       select id from contact_imports
        where id < ? and status in ('completed', 'failed')
        order by id limit ? for update skip locked),
     errors as (delete from contact_import_errors r using doomed where r.import_id = doomed.id),
     members as (delete from contact_import_members m using doomed where m.import_id = doomed.id)
     delete from contact_imports i using doomed where i.id = doomed.id returning i.blob_key`,
    [beforeId, batchSize],
  );
  return { deleted: rows.length, blobKeys: rows.flatMap((row) => (row.blob_key ? [row.blob_key] : [])) };
}

/** Idempotency records past their 24 hours (their own expiry, not a setting). */
export function deleteExpiredIdempotencyRecords(em: EntityManager, now: Date, batchSize: number): Promise<BatchResult> {
  return counted(
    em,
    `/* all workspaces: expired idempotency records */
     with doomed as (
       select id from idempotency_records where expires_at < ?
        order by expires_at limit ? for update skip locked),
     gone as (delete from idempotency_records r using doomed where r.id = doomed.id returning 1)
     select count(*)::int as deleted from gone`,
    [now, batchSize],
  );
}

/** Dashboard sessions that ended (expired or signed out) before `endedBefore`. */
export function deleteEndedSessions(em: EntityManager, beforeId: string, batchSize: number, endedBefore: Date): Promise<BatchResult> {
  return counted(
    em,
    `/* all workspaces: retention of ended dashboard sessions */
     with doomed as (
       select id from dashboard_sessions
        where id < ? and (expires_at < ? or revoked_at < ?)
        order by id limit ? for update skip locked),
     gone as (delete from dashboard_sessions s using doomed where s.id = doomed.id returning 1)
     select count(*)::int as deleted from gone`,
    [beforeId, endedBefore, endedBefore, batchSize],
  );
}

/** Dashboard invitations and sign-in links used or expired before `endedBefore`. */
export function deleteEndedInvites(em: EntityManager, beforeId: string, batchSize: number, endedBefore: Date): Promise<BatchResult> {
  return counted(
    em,
    `/* all workspaces: retention of used or expired dashboard invitations */
     with doomed as (
       select id from dashboard_invites
        where id < ? and (expires_at < ? or accepted_at < ?)
        order by id limit ? for update skip locked),
     gone as (delete from dashboard_invites i using doomed where i.id = doomed.id returning 1)
     select count(*)::int as deleted from gone`,
    [beforeId, endedBefore, endedBefore, batchSize],
  );
}
