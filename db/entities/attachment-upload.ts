import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn } from './columns.ts';

export const UPLOAD_STATUSES = ['pending', 'uploaded'] as const;
export type UploadStatus = (typeof UPLOAD_STATUSES)[number];

/**
 * An attachment uploaded out of band (POST /api/v1/outbox/attachments, then a signed PUT to
 * /uploads/<id>). The id is the public attachment_id. `referencedAt` is set by the first send
 * that uses it; uploads never referenced are deleted (row and blob) 7 days after creation.
 */
export const AttachmentUploadSchema = defineEntity({
  name: 'AttachmentUpload',
  tableName: 'attachment_uploads',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn(),
    filename: p.string().length(512),
    contentType: p.string().length(255),
    sizeBytes: p.integer(),
    status: p.enum(UPLOAD_STATUSES).default('pending'),
    blobKey: p.string().length(200),
    sha256: p.string().length(64).nullable(),
    /** When the signed upload URL stops working. */
    expiresAt: p.datetime(),
    uploadedAt: p.datetime().nullable(),
    referencedAt: p.datetime().nullable(),
    createdAt: createdAtColumn(),
  },
  indexes: [{ name: 'attachment_uploads_unreferenced_index', properties: ['createdAt'], where: { referencedAt: null } }],
});

export class AttachmentUpload extends AttachmentUploadSchema.class {}
AttachmentUploadSchema.setClass(AttachmentUpload);
