import Router from '@koa/router';
import { AppError } from '../../errors.ts';
import { respond } from '../../http/envelope.ts';
import type { HeraldState } from '../../http/state.ts';
import { serializeUploadedAttachment } from './attachments.serializer.ts';
import type { AttachmentsService } from './attachments.service.ts';
import type { ContactImportsService } from '../contacts/contact-imports.service.ts';
import { serializeContactImport } from '../contacts/contact-imports.serializer.ts';

/**
 * PUT /uploads/:id?expires=&sig= — step two of an attachment upload, outside /api/v1. No API key:
 * the URL's signature is the credential. Mounted before the body parser, so the request stream
 * reaches the blob store untouched whatever its Content-Type; Content-Type and Content-Length
 * must be exactly the signed ones. Answers 200 with the stored attachment (sha256 of the bytes)
 * in the success envelope; any other method is 405.
 */
export function createUploadsRouter(deps: { attachments: AttachmentsService; contactImports: ContactImportsService }): Router<HeraldState> {
  const router = new Router<HeraldState>();
  // A contact import's CSV file (docs/contacts-import.md): streamed to the blob store, then
  // validated and imported by the import's workflow; 202 with the import.
  router.all('/uploads/contact-imports/:id', async (ctx) => {
    if (ctx.method !== 'PUT') {
      throw new AppError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}; upload with PUT.`, undefined, { Allow: 'PUT' });
    }
    const query = new URLSearchParams(ctx.querystring);
    const contactImport = await deps.contactImports.receiveUpload({
      importId: ctx.params.id ?? '',
      expires: query.get('expires') ?? undefined,
      sig: query.get('sig') ?? undefined,
      contentType: ctx.get('content-type') || undefined,
      contentLength: ctx.get('content-length') || undefined,
      body: ctx.req,
    });
    respond(ctx, 202, serializeContactImport(contactImport));
  });
  router.all('/uploads/:id', async (ctx) => {
    if (ctx.method !== 'PUT') {
      throw new AppError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}; upload with PUT.`, undefined, { Allow: 'PUT' });
    }
    const query = new URLSearchParams(ctx.querystring);
    const upload = await deps.attachments.receiveUpload({
      attachmentId: ctx.params.id ?? '',
      expires: query.get('expires') ?? undefined,
      sig: query.get('sig') ?? undefined,
      contentType: ctx.get('content-type') || undefined,
      contentLength: ctx.get('content-length') || undefined,
      hasTransferEncoding: ctx.get('transfer-encoding') !== '',
      body: ctx.req,
    });
    respond(ctx, 200, serializeUploadedAttachment(upload));
  });
  return router;
}
