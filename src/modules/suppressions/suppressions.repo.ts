import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../../db/ids.ts';

/**
 * Takes `email` off the workspace's suppression list for `stream` ('' : the entry for every
 * stream) and records the removal (by `apiKeyId`) in its history, in one statement; false
 * when the address had no entry of that scope.
 */
export async function deleteSuppression(
  em: EntityManager,
  orgId: string,
  email: string,
  stream: string,
  apiKeyId: string | null,
): Promise<boolean> {
  const removed = await em.execute<{ id: string }[]>(
    `with gone as (delete from suppressions where org_id = :org and email = :email and stream = :stream
                   returning org_id, email, reason, email_id, detail, stream)
     insert into suppression_changes (id, org_id, email, action, reason, api_key_id, email_id, detail, stream, created_at)
     select :changeId, org_id, email, 'removed', reason, :apiKeyId, email_id, detail, stream, now() from gone
     returning id`,
    { org: orgId, email, stream, changeId: newId(), apiKeyId },
  );
  return removed.length > 0;
}

/** The scopes `email` is listed under ('' : every stream). */
export async function suppressionScopes(em: EntityManager, orgId: string, email: string): Promise<string[]> {
  const rows = await em.execute<{ stream: string }[]>(`select stream from suppressions where org_id = :org and email = :email`, {
    org: orgId,
    email,
  });
  return rows.map((row) => row.stream);
}
