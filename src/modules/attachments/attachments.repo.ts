/**
 * Queries on attachment_uploads that the entity API cannot say in one statement. Raw SQL is
 * outside the tenant filter, so each statement names the workspace or is platform code by
 * design (the cleanup runs across workspaces).
 */
import type { EntityManager } from '../../../db/orm.ts';

/** Transactional email states in which an email may still read its attachments' bytes. */
export const OPEN_EMAIL_STATUSES = ['scheduled', 'queued', 'sending'] as const;

export interface StaleUpload {
  id: string;
  org_id: string;
  blob_key: string;
}

/*
 * Unused since the cutoff (last referenced, or created when never referenced; pending uploads
 * included) and read by no open email of the workspace. `for update skip locked` keeps a
 * concurrent send that references the upload (it updates referenced_at) and a second cleanup
 * run off these rows until the transaction ends.
 */
const CLAIM_STALE_SQL = `
  select u.id, u.org_id, u.blob_key
    from attachment_uploads u
   where coalesce(u.referenced_at, u.created_at) < ?::timestamptz
     and not exists (
       select 1 from transactional_emails e
        where e.org_id = u.org_id
          and e.status in (${OPEN_EMAIL_STATUSES.map((s) => `'${s}'`).join(', ')})
          and e.attachments @> jsonb_build_array(jsonb_build_object('attachment_id', u.id)))
   order by u.created_at, u.id
   limit ?
     for update of u skip locked`;

/** Locks up to `limit` stale uploads (all workspaces) for deletion; call inside a transaction. */
export async function claimStaleUploads(em: EntityManager, cutoff: Date, limit: number): Promise<StaleUpload[]> {
  return em.execute<StaleUpload[]>(CLAIM_STALE_SQL, [cutoff.toISOString(), limit]);
}

/** Deletes upload rows by id (platform code: ids come from claimStaleUploads). */
export async function deleteUploadRows(em: EntityManager, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await em.execute(`/* all workspaces: ids from claimStaleUploads */ delete from attachment_uploads where id in (?)`, [[...ids]], 'run');
}
