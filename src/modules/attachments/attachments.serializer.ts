import type { AttachmentUpload } from '../../../db/entities/index.ts';

/** The 201 of POST /outbox/attachments: where and how to PUT the bytes. */
export function serializeAttachmentUpload(created: { upload: AttachmentUpload; uploadUrl: string }) {
  return {
    attachment_id: created.upload.id,
    upload_url: created.uploadUrl,
    expires_at: created.upload.expiresAt.toISOString(),
    required_headers: {
      'Content-Type': created.upload.contentType,
      'Content-Length': String(created.upload.sizeBytes),
    },
  };
}

/** The 200 of a successful PUT /uploads/<id>. */
export function serializeUploadedAttachment(upload: AttachmentUpload) {
  return {
    attachment_id: upload.id,
    filename: upload.filename,
    content_type: upload.contentType,
    size_bytes: upload.sizeBytes,
    sha256: upload.sha256,
    status: upload.status,
    uploaded_at: upload.uploadedAt?.toISOString() ?? null,
  };
}
