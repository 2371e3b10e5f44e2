import * as v from 'valibot';
import { Timestamp } from '../../http/schemas.ts';
import { CONTENT_TYPE_MAX_LENGTH, FILENAME_MAX_LENGTH, MAX_ATTACHMENT_BYTES } from './attachments.fns.ts';

/*
 * The request schema checks shapes only. The rules on the values (file name, MIME type, deny
 * lists, the 12 MB limit) are the service's, because the spec answers them with their own
 * reasons (400 INVALID_ATTACHMENT, 413 ATTACHMENT_TOO_LARGE) rather than a plain field error;
 * `metadata` (which validates nothing) still documents them in OpenAPI.
 */
const Filename = v.pipe(
  v.string(),
  v.metadata({
    minLength: 1,
    maxLength: FILENAME_MAX_LENGTH,
    description: 'The file name, not a path; executable and script extensions (.exe, .js, …) are refused.',
  }),
);

const ContentType = v.pipe(
  v.string(),
  v.metadata({
    maxLength: CONTENT_TYPE_MAX_LENGTH,
    description: 'A MIME type (parameters allowed); executable and script types are refused.',
    examples: ['application/pdf'],
  }),
);

const SizeBytes = v.pipe(
  v.number(),
  v.integer('must be an integer'),
  v.minValue(1, 'must be at least 1 byte'),
  v.metadata({
    maximum: MAX_ATTACHMENT_BYTES,
    description: 'The exact byte length of the file; the upload URL is signed against it. Over 12 MB is 413.',
  }),
);

export const CreateAttachmentUploadBody = v.strictObject({
  filename: Filename,
  content_type: ContentType,
  size_bytes: SizeBytes,
});

export type CreateAttachmentUploadInput = v.InferOutput<typeof CreateAttachmentUploadBody>;

/** The attachment upload (spec, "Attachment upload"). */
export const AttachmentUploadResponse = v.object({
  attachment_id: v.string(),
  upload_url: v.pipe(v.string(), v.url()),
  expires_at: Timestamp,
  required_headers: v.record(v.string(), v.string()),
});

/**
 * The spec's `details.reason` for a request body that fails its shape: a missing or malformed
 * file name (or content type) is INVALID_ATTACHMENT, as the value rules of the service answer it.
 */
export function attachmentBodyErrorReason(fields: readonly { path: string }[]): string | undefined {
  return fields.some((field) => field.path === 'filename' || field.path === 'content_type') ? 'INVALID_ATTACHMENT' : undefined;
}
