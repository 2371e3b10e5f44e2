import { KIB } from '../../http/body-limits.ts';
import { defineRoute } from '../../http/route.ts';
import { AttachmentUploadResponse, attachmentBodyErrorReason, CreateAttachmentUploadBody } from './attachments.schemas.ts';
import { serializeAttachmentUpload } from './attachments.serializer.ts';
import type { AttachmentsService } from './attachments.service.ts';

/**
 * POST /outbox/attachments: step one of an upload. Answers an attachment_id and a URL signed
 * for exactly the declared content type and byte length; the client PUTs the bytes there
 * (uploads.router.ts, outside /api/v1, so they never pass through the API's body limit) and
 * references attachment_id in a later send. The spec lists no Idempotency-Key for it: one is
 * honoured when sent.
 */
export function createAttachmentsRoutes(deps: { attachments: AttachmentsService }) {
  return [
    defineRoute({
      operationId: 'createAttachmentUpload',
      method: 'POST',
      path: '/outbox/attachments',
      summary: 'Create an attachment upload',
      description:
        'Returns `upload_url`, signed for one hour to the declared `content_type` and `size_bytes`. Upload the bytes ' +
        'with `PUT upload_url`, sending exactly `required_headers` (no API key: the signature is the credential), then ' +
        'reference `attachment_id` in a send. Executables and scripts are refused (400, details.reason ' +
        'INVALID_ATTACHMENT); over 12 MB is 413 (details.reason ATTACHMENT_TOO_LARGE); 503 when attachment storage ' +
        'is not configured. Uploads unused for 7 days are deleted.',
      tag: 'Outbox',
      scope: 'outbox.transactional:send',
      idempotency: 'optional',
      body: CreateAttachmentUploadBody,
      bodyErrorReason: attachmentBodyErrorReason,
      // filename 512 + content_type 255 characters, even \u-escaped (6 bytes each): under 5 KB.
      bodyLimit: 8 * KIB,
      response: { status: 201, description: 'The upload slot and its signed URL', schema: AttachmentUploadResponse },
      errors: ['invalid_request', 'payload_too_large', 'service_unavailable'],
      async handle({ caller, body }) {
        return { status: 201, data: serializeAttachmentUpload(await deps.attachments.createUpload(caller.orgId, body)) };
      },
    }),
  ];
}
