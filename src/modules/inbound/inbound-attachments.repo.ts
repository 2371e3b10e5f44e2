/**
 * The inbound attachment store's write of inbox_attachments rows (attachments.ts): each row
 * carries the workspace of the inbox message it belongs to.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { sql } from 'kysely';
import { newId } from '../../../db/ids.ts';
import { workspaceDb } from '../../../db/workspace-db.ts';

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
  await workspaceDb(em, row.orgId)
    .insertInto('inbox_attachments')
    .values({
      id: newId(),
      org_id: row.orgId,
      message_id: row.messageId,
      position: row.position,
      filename: row.filename,
      content_type: row.contentType,
      size_bytes: row.sizeBytes,
      content_id: row.contentId,
      status: 'stored',
      blob_key: row.blobKey,
      sha256: row.sha256,
      created_at: sql<string>`now()`,
    })
    .onConflict((conflict) =>
      conflict.columns(['message_id', 'position']).doUpdateSet((eb) => ({
        status: 'stored',
        blob_key: eb.ref('excluded.blob_key'),
        sha256: eb.ref('excluded.sha256'),
        size_bytes: eb.ref('excluded.size_bytes'),
        filename: eb.ref('excluded.filename'),
        content_type: eb.ref('excluded.content_type'),
        content_id: eb.ref('excluded.content_id'),
      })),
    )
    .execute();
}
