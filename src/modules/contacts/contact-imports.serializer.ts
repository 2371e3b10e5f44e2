import type { ContactImport } from '../../../db/entities/index.ts';

/**
 * An import as the API shows it. An import still awaiting its file after its upload URL lapsed
 * is shown failed (UPLOAD_EXPIRED): nothing can happen to it any more.
 */
export function serializeContactImport(contactImport: ContactImport, now = new Date()) {
  const lapsed = contactImport.status === 'awaiting_upload' && contactImport.uploadExpiresAt.getTime() <= now.getTime();
  return {
    _id: contactImport.id,
    status: lapsed ? 'failed' : contactImport.status,
    filename: contactImport.filename ?? null,
    size_bytes: contactImport.sizeBytes ?? null,
    total_rows: contactImport.totalRows ?? null,
    rows_processed: contactImport.rowsDone,
    created: contactImport.created,
    updated: contactImport.updated,
    unchanged: contactImport.unchanged,
    skipped: contactImport.skipped,
    segment_id: contactImport.segmentId ?? null,
    added_to_segment: contactImport.addedToSegment ?? 0,
    failure: lapsed
      ? { reason: 'UPLOAD_EXPIRED', message: 'No file was uploaded before the upload URL expired.', line: null }
      : (contactImport.failure ?? null),
    errors_url: `/api/v1/contacts/imports/${contactImport.id}/errors`,
    upload_expires_at: contactImport.uploadExpiresAt.toISOString(),
    uploaded_at: contactImport.uploadedAt?.toISOString() ?? null,
    completed_at: contactImport.completedAt?.toISOString() ?? null,
    created_at: contactImport.createdAt.toISOString(),
    updated_at: contactImport.updatedAt.toISOString(),
  };
}
