/**
 * The inbound attachment store's write of inbox_attachments rows (attachments.ts): each row
 * carries the workspace of the inbox message it belongs to.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../../db/ids.ts';

/** An attachment of an inbox message whose bytes are stored. */
export interface StoredAttachmentRow {
  orgId: string;
  messageId: string;
  position: number;
  filename: string;
  contentType: string;
  sizeBytes: number;
  contentId: string | null;
  blobKey: string;
  sha256: string;
}

/** Writes an attachment row as `stored` (inserted, or the row at its message and position updated). */
export async function upsertStoredAttachment(em: EntityManager, row: StoredAttachmentRow): Promise<void> {
  await em.getConnection().execute(
    `insert into inbox_attachments (id, org_id, message_id, position, filename, content_type, size_bytes, content_id, status, blob_key, sha256, created_at)
     values (?, ?, ?, ?, ?, ?, ?, ?, 'stored', ?, ?, now())
     on conflict (message_id, position) do update
       set status = 'stored', blob_key = excluded.blob_key, sha256 = excluded.sha256, size_bytes = excluded.size_bytes,
           filename = excluded.filename, content_type = excluded.content_type, content_id = excluded.content_id`,
    [newId(), row.orgId, row.messageId, row.position, row.filename, row.contentType, row.sizeBytes, row.contentId, row.blobKey, row.sha256],
    'run',
  );
}
