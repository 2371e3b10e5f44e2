import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../../db/ids.ts';

/**
 * Takes `email` off the workspace's suppression list and records the removal (by `apiKeyId`)
 * in its history, in one statement; false when the address was not on the list.
 */
export async function deleteSuppression(em: EntityManager, orgId: string, email: string, apiKeyId: string | null): Promise<boolean> {
  const removed = await em.execute<{ id: string }[]>(
    `with gone as (delete from suppressions where org_id = :org and email = :email returning org_id, email, reason, email_id, detail)
     insert into suppression_changes (id, org_id, email, action, reason, api_key_id, email_id, detail, created_at)
     select :changeId, org_id, email, 'removed', reason, :apiKeyId, email_id, detail, now() from gone
     returning id`,
    { org: orgId, email, changeId: newId(), apiKeyId },
  );
  return removed.length > 0;
}
