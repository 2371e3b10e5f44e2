import type { EntityManager } from '@mikro-orm/postgresql';
import { AttachmentUpload, type EmailAttachmentRecord } from '../../../db/entities/index.ts';
import { AppError } from '../../errors.ts';
import type { FieldProblem } from '../../validation.ts';
import { contentTypeProblem, filenameProblem } from '../attachments/attachments.fns.ts';
import { base64DecodedLength } from './sends.fns.ts';
import { SEND_LIMITS, type InlineAttachmentInput, type StoredAttachmentInput } from './sends.schemas.ts';

/** An attachment checked for a send: its record, and for inline ones the decoded bytes to store. */
export interface PreparedAttachment {
  record: EmailAttachmentRecord;
  bytes: Buffer | null;
}

const MB = 1024 * 1024;

function invalid(index: number, field: string, type: string, message: string): AppError {
  const fields: FieldProblem[] = [{ path: `attachments.${index}.${field}`, location: 'body', type, message }];
  return new AppError('invalid_request', `Invalid body.attachments.${index}.${field}: ${message}.`, {
    reason: 'INVALID_ATTACHMENT',
    fields,
  });
}

function tooLarge(index: number, size: number): AppError {
  return new AppError(
    'payload_too_large',
    `Attachment ${index} is ${size} bytes decoded; one attachment may be at most ${SEND_LIMITS.attachmentBytesMax} bytes (12 MB).`,
    { reason: 'ATTACHMENT_TOO_LARGE', index, size_bytes: size, limit_bytes: SEND_LIMITS.attachmentBytesMax },
  );
}

function checkNameAndType(index: number, filename: string, contentType: string | null): void {
  const problems = [filenameProblem(filename), contentType === null ? null : contentTypeProblem(contentType)];
  const found = problems.find((p) => p !== null);
  if (found) throw invalid(index, found.path, found.type, found.message);
}

/**
 * Checks a send's attachments in order: each inline one decodes (with `decode`) as base64 to at most 12 MB
 * (413 ATTACHMENT_TOO_LARGE), names a file and an allowed type (the upload rules, 400
 * INVALID_ATTACHMENT), content ids are unique; each stored reference names an upload of this
 * workspace whose bytes arrived (else 404 INVALID_ATTACHMENT).
 */
export async function prepareAttachments(
  em: EntityManager,
  attachments: readonly (InlineAttachmentInput | StoredAttachmentInput)[],
  decode: (base64: string) => Promise<Buffer | null>,
): Promise<PreparedAttachment[]> {
  const contentIds = new Set<string>();
  const storedIds = attachments.flatMap((a) => ('attachment_id' in a ? [a.attachment_id] : []));
  const uploads = storedIds.length === 0 ? [] : await em.find(AttachmentUpload, { id: { $in: storedIds }, status: 'uploaded' });
  const byId = new Map(uploads.map((u) => [u.id, u]));
  const prepared: PreparedAttachment[] = [];
  for (const [index, attachment] of attachments.entries()) {
    if (attachment.content_id !== undefined) {
      const key = attachment.content_id.toLowerCase();
      if (contentIds.has(key))
        throw invalid(index, 'content_id', 'duplicate', `content_id "${attachment.content_id}" is used twice in this message`);
      contentIds.add(key);
    }
    if ('attachment_id' in attachment) {
      const upload = byId.get(attachment.attachment_id);
      if (!upload) {
        throw new AppError(
          'not_found',
          `Attachment ${attachment.attachment_id} does not exist in this workspace or its upload has not finished.`,
          {
            reason: 'INVALID_ATTACHMENT',
            attachment_id: attachment.attachment_id,
            index,
          },
        );
      }
      const filename = attachment.filename ?? upload.filename;
      const contentType = attachment.content_type ?? upload.contentType;
      checkNameAndType(index, filename, contentType);
      if (upload.sizeBytes > SEND_LIMITS.attachmentBytesMax) throw tooLarge(index, upload.sizeBytes);
      prepared.push({
        record: {
          filename,
          content_type: contentType,
          size_bytes: upload.sizeBytes,
          content_id: attachment.content_id ?? null,
          blob_key: upload.blobKey,
          attachment_id: upload.id,
        },
        bytes: null,
      });
      continue;
    }
    const declared = base64DecodedLength(attachment.content);
    if (declared > SEND_LIMITS.attachmentBytesMax) throw tooLarge(index, declared);
    const bytes = await decode(attachment.content);
    if (bytes === null) throw invalid(index, 'content', 'base64', 'must be base64 (standard alphabet)');
    if (bytes.length > SEND_LIMITS.attachmentBytesMax) throw tooLarge(index, bytes.length);
    checkNameAndType(index, attachment.filename, attachment.content_type ?? null);
    prepared.push({
      record: {
        filename: attachment.filename,
        content_type: attachment.content_type ?? null,
        size_bytes: bytes.length,
        content_id: attachment.content_id ?? null,
        blob_key: null,
        attachment_id: null,
      },
      bytes,
    });
  }
  return prepared;
}

/** Bodies plus decoded attachments, the quantity the 25 MB message limit bounds. */
export function messageSize(html: string | undefined, text: string | undefined, attachments: readonly PreparedAttachment[]): number {
  return (
    Buffer.byteLength(html ?? '', 'utf8') +
    Buffer.byteLength(text ?? '', 'utf8') +
    attachments.reduce((sum, a) => sum + a.record.size_bytes, 0)
  );
}

export function messageTooLarge(size: number): AppError {
  return new AppError(
    'payload_too_large',
    `The message is ${(size / MB).toFixed(1)} MB (bodies plus decoded attachments); the limit is 25 MB.`,
    { reason: 'MESSAGE_TOO_LARGE', size_bytes: size, limit_bytes: SEND_LIMITS.messageBytesMax },
  );
}
