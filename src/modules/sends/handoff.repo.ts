/**
 * The send API's opt-in hand-off read (what the first attempt came to), through `workspaceDb`,
 * which confines it (recipient subqueries included) to the workspace.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { workspaceDb } from '../../../db/workspace-db.ts';

/**
 * accepted: the relay took the message for at least one recipient (or all were settled one
 * by one) · deferred: every recipient got a temporary failure or the relay was unreachable;
 * Herald retries · rejected: the relay refused the message itself (5xx at MAIL FROM or DATA):
 * nothing was sent, credits and quota were released · cancelled: cancelled before sending.
 */
export interface HandoffResult {
  outcome: 'accepted' | 'deferred' | 'rejected' | 'cancelled';
  response: string | null;
}

/**
 * What the first attempt of an email came to, or null while it has none: accepted (the relay
 * took it for a recipient, or every recipient is settled), deferred (every recipient got a
 * temporary failure), rejected (refused as a whole before hand-off: failed with credits given
 * back), cancelled.
 */
export async function readHandoff(em: EntityManager, orgId: string, emailId: string): Promise<HandoffResult | null> {
  const row = await workspaceDb(em, orgId)
    .selectFrom('transactional_emails as e')
    .select((eb) => [
      'e.status',
      'e.quota_released',
      'e.last_error',
      eb
        .exists(
          eb
            .selectFrom('email_recipients as r')
            .select('r.id')
            .whereRef('r.email_id', '=', 'e.id')
            .where('r.status', 'in', ['sent', 'delivered', 'bounced', 'complained']),
        )
        .as('handed'),
      eb
        .exists(
          eb.selectFrom('email_recipients as r').select('r.id').whereRef('r.email_id', '=', 'e.id').where('r.status', '=', 'deferred'),
        )
        .as('deferred'),
    ])
    .where('e.id', '=', emailId)
    .executeTakeFirst();
  if (!row) return null;
  if (row.status === 'cancelled') return { outcome: 'cancelled', response: null };
  if (row.status === 'failed' && row.quota_released && !row.handed) return { outcome: 'rejected', response: row.last_error };
  if (row.status === 'sent' || row.status === 'failed' || row.handed) return { outcome: 'accepted', response: null };
  if (row.deferred) return { outcome: 'deferred', response: row.last_error };
  return null;
}
