/**
 * The send API's opt-in hand-off read (what the first attempt came to), and the read of an
 * email's status and domain for the hand-over of a legacy sendEmail run (legacy-handover.ts).
 * Raw SQL is outside the tenant filter, so every clause names the workspace itself.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { EmailStatus } from '../../../db/entities/index.ts';
import type { HandoffResult } from '../../../workflows/sends.ts';

export type { HandoffResult } from '../../../workflows/sends.ts';

/**
 * What the first attempt of an email came to, or null while it has none: accepted (the relay
 * took it for a recipient, or every recipient is settled), deferred (every recipient got a
 * temporary failure), rejected (refused as a whole before hand-off: failed with credits given
 * back), cancelled.
 */
export async function readHandoff(em: EntityManager, orgId: string, emailId: string): Promise<HandoffResult | null> {
  const [row] = await em.getConnection().execute<{ status: string; quota_released: boolean; last_error: string | null; handed: boolean; deferred: boolean }[]>(
    `select e.status, e.quota_released, e.last_error,
            exists (select 1 from email_recipients r where r.email_id = e.id /* workspace: recipients reached through their email, whose workspace the statement names */
                     and r.status in ('sent', 'delivered', 'bounced', 'complained')) as handed,
            exists (select 1 from email_recipients r where r.email_id = e.id and r.status = 'deferred') as deferred
       from transactional_emails e where e.id = ? and e.org_id = ?`,
    [emailId, orgId],
  );
  if (!row) return null;
  if (row.status === 'cancelled') return { outcome: 'cancelled', response: null };
  if (row.status === 'failed' && row.quota_released && !row.handed) return { outcome: 'rejected', response: row.last_error };
  if (row.status === 'sent' || row.status === 'failed' || row.handed) return { outcome: 'accepted', response: null };
  if (row.deferred) return { outcome: 'deferred', response: row.last_error };
  return null;
}

/** Reads a workspace's email's status and sending domain, or undefined when it has no such email. */
export async function findEmailStatus(em: EntityManager, orgId: string, emailId: string): Promise<{ status: EmailStatus; domain_id: string } | undefined> {
  const [row] = await em.getConnection().execute<{ status: EmailStatus; domain_id: string }[]>(
    `select status, domain_id from transactional_emails where id = ? and org_id = ?`,
    [emailId, orgId],
  );
  return row;
}
