import Router from '@koa/router';
import type { Context } from 'koa';
import { AppError } from '../../errors.ts';
import { respond } from '../../http/envelope.ts';
import type { HeraldState } from '../../http/state.ts';
import { serializeUploadedAttachment } from './attachments.serializer.ts';
import type { AttachmentsService } from './attachments.service.ts';
import type { ContactImportsService } from '../contacts/contact-imports.service.ts';
import { serializeContactImport } from '../contacts/contact-imports.serializer.ts';

/** What every signed upload carries: the id and signature of its URL, its headers and its body stream. */
interface SignedUpload {
  id: string;
  expires: string | undefined;
  sig: string | undefined;
  contentType: string | undefined;
  contentLength: string | undefined;
  hasTransferEncoding: boolean;
  body: Context['req'];
}

/** A PUT-only route (405 with `Allow: PUT` for any other method) handed the signed upload it carries. */
function putUpload(router: Router<HeraldState>, path: string, handle: (ctx: Context, upload: SignedUpload) => Promise<void>): void {
  router.all(path, async (ctx) => {
    if (ctx.method !== 'PUT') {
      throw new AppError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}; upload with PUT.`, undefined, {
        allow: ['PUT'],
      });
    }
    const query = new URLSearchParams(ctx.querystring);
    await handle(ctx, {
      id: ctx.params.id ?? '',
      expires: query.get('expires') ?? undefined,
      sig: query.get('sig') ?? undefined,
      contentType: ctx.get('content-type') || undefined,
      contentLength: ctx.get('content-length') || undefined,
      hasTransferEncoding: ctx.get('transfer-encoding') !== '',
      body: ctx.req,
    });
  });
}

/**
 * Signed uploads, outside /api/v1, mounted before the body parser so the request stream reaches
 * the blob store untouched. No API key: the URL's signature is the credential.
 * - PUT /uploads/:id?expires=&sig= — step two of an attachment upload; Content-Type and
 *   Content-Length must be exactly the signed ones; 200 with the stored attachment (sha256).
 * - PUT /uploads/contact-imports/:id?expires=&sig= — a contact import's CSV file
 *   (docs/contacts-import.md), streamed to the blob store, then validated and imported by the
 *   import's workflow; 202 with the import.
 */
export function createUploadsRouter(deps: { attachments: AttachmentsService; contactImports: ContactImportsService }): Router<HeraldState> {
  const router = new Router<HeraldState>();
  putUpload(router, '/uploads/contact-imports/:id', async (ctx, upload) => {
    const contactImport = await deps.contactImports.receiveUpload({ ...upload, importId: upload.id });
    respond(ctx, 202, serializeContactImport(contactImport));
  });
  putUpload(router, '/uploads/:id', async (ctx, upload) => {
    respond(ctx, 200, serializeUploadedAttachment(await deps.attachments.receiveUpload({ ...upload, attachmentId: upload.id })));
  });
  return router;
}
