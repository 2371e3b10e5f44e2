/**
 * The group commit's writes of accepted attempts (sent-recorder.ts): the recipient rows and the
 * email rows settling as sent, many attempts per statement, in the caller's transaction. Every
 * row is matched on its id and its workspace.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Why a claimed email's recipients are looked up by its id alone: the email row is the
 * workspace's, and so are its recipients. With the workspace's condition as well, PostgreSQL
 * without fresh statistics (right after an audience of 100,000 was written, before autovacuum
 * analyzed it) combined the unique (email_id, email) index with a scan of every recipient row
 * of the workspace: 6 ms per claimed email at 100,000.
 */
export const BY_EMAIL_ID = 'recipients reached through their email, whose workspace the statement names';

/** One recipient of an accepted attempt: the relay's answer (at most 1,024 characters) and when (ISO 8601). */
export interface SentRecipientRow {
  id: string;
  orgId: string;
  response: string | null;
  at: string;
}

/** One email of an accepted attempt and when it was accepted (ISO 8601). */
export interface SentEmailRow {
  id: string;
  orgId: string;
  at: string;
}

/**
 * Writes `status` (sent or delivered) to the recipient rows still queued or deferred, with
 * their answer and send time; returns the ids of the rows it changed.
 */
export async function markRecipientsSent(
  tx: EntityManager,
  status: 'sent' | 'delivered',
  rows: readonly SentRecipientRow[],
): Promise<{ id: string }[]> {
  return tx.execute<{ id: string }[]>(
    `update email_recipients r
            set status = ?, sent_at = v.at::timestamptz, last_response = v.response, next_attempt_at = null,
                attempts = r.attempts + 1, updated_at = now()
           from (values ${rows.map(() => '(?, ?, ?, ?)').join(', ')}) v (id, org_id, response, at)
          where r.id = v.id and r.org_id = v.org_id and r.status in ('queued', 'deferred')
         returning r.id`,
    [status, ...rows.flatMap((r) => [r.id, r.orgId, r.response, r.at])],
  );
}

/** Settles as sent the emails still sending that have no recipient left queued or deferred. */
export async function settleEmailsSent(tx: EntityManager, rows: readonly SentEmailRow[]): Promise<void> {
  await tx.execute(
    `update transactional_emails e
            set status = 'sent', sent_at = coalesce(e.sent_at, v.at::timestamptz), settled_at = v.at::timestamptz,
                next_attempt_at = null, updated_at = now()
           from (values ${rows.map(() => '(?, ?, ?)').join(', ')}) v (id, org_id, at)
          where e.id = v.id and e.org_id = v.org_id and e.status = 'sending'
            and not exists (select 1 from email_recipients r
                             where r.email_id = e.id /* workspace: ${BY_EMAIL_ID} */ and r.status in ('queued', 'deferred'))`,
    rows.flatMap((r) => [r.id, r.orgId, r.at]),
    'run',
  );
}
