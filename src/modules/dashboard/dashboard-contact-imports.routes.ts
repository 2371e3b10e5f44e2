import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { Next } from 'koa';
import { koaBody } from 'koa-body';
import type { File } from 'formidable';
import { isId } from '../../../db/ids.ts';
import type { ApiServices } from '../../api-composition.ts';
import { AppError } from '../../errors.ts';
import { IMPORT_LIMITS } from '../contacts/contact-import.fns.ts';
import { importPage, importsPage, newImportPage, IMPORT_RELOAD_SECONDS, isImportRunning } from './dashboard-contact-imports.pages.ts';
import { pathId, type DashboardArea, type DashboardContext, type DashboardKit } from './dashboard-kit.router.ts';

/**
 * The CSV file of a new import, as a multipart form (a browser cannot PUT the API's signed
 * upload URL under the pages' Content-Security-Policy, which allows no fetch): formidable writes
 * it to a temporary file (at most IMPORT_LIMITS.maxBytes), removed once the request is answered,
 * whatever happened.
 */
function multipartUpload() {
  const parse = koaBody({
    multipart: true,
    urlencoded: false,
    json: false,
    text: false,
    formLimit: '64kb',
    formidable: { maxFileSize: IMPORT_LIMITS.maxBytes, maxFiles: 1, maxFields: 10, allowEmptyFiles: true, minFileSize: 0 },
  });
  return async (ctx: DashboardContext, next: Next): Promise<void> => {
    try {
      await parse(ctx, async () => {});
    } catch (error) {
      const tooLarge = /maxFileSize|exceeded/i.test((error as Error).message);
      ctx.state.uploadProblem = tooLarge
        ? `A contact import file is at most ${IMPORT_LIMITS.maxBytes / 1024 / 1024} MB.`
        : 'The file could not be read; choose it again.';
      ctx.request.body = {};
    }
    try {
      await next();
    } finally {
      const files = ctx.request.files ? Object.values(ctx.request.files).flat() : [];
      await Promise.all(files.map((file) => rm(file.filepath, { force: true })));
    }
  };
}

/**
 * Contact imports in the dashboard (/dashboard/contacts/imports): the list, a form that uploads
 * a CSV file (the import service's rules: POST /contacts/imports, then its signed upload, in one
 * step), an import's progress (the page reloads itself while it runs) and its error report
 * (GET /contacts/imports/{id}/errors). Mounted before the contacts area (its /contacts/:id).
 */
export function contactImportsArea(services: ApiServices): DashboardArea {
  const { contactImports } = services;

  return (router, kit: DashboardKit) => {
    router.get('/contacts/imports', kit.requireSession, async (ctx) => {
      const signedIn = kit.signedInOf(ctx);
      const page = await contactImports.listImports(signedIn.orgId, { limit: 50 });
      kit.send(ctx, 200, importsPage({ signedIn, imports: page.items }));
    });

    router.get('/contacts/imports/new', kit.requireSession, (ctx) => kit.send(ctx, 200, newImportPage({ signedIn: kit.signedInOf(ctx) })));

    router.post('/contacts/imports', multipartUpload(), kit.requireSession, async (ctx) => {
      const signedIn = kit.signedInOf(ctx);
      const again = (status: number, error: string) => kit.send(ctx, status, newImportPage({ signedIn, error }));
      const problem = (ctx.state as { uploadProblem?: string }).uploadProblem;
      if (problem) return again(problem.includes('at most') ? 413 : 400, problem);
      const file: File | undefined = [ctx.request.files?.file].flat()[0];
      if (!file || file.size === 0) return again(400, 'Choose a CSV file to import.');
      try {
        const filename = (file.originalFilename ?? 'contacts.csv').slice(0, 255);
        const { contactImport, uploadUrl } = await contactImports.createImport(signedIn.orgId, { filename });
        const signed = new URL(uploadUrl).searchParams;
        await contactImports.receiveUpload({
          importId: contactImport.id,
          expires: signed.get('expires') ?? undefined,
          sig: signed.get('sig') ?? undefined,
          contentType: 'text/csv',
          contentLength: String(file.size),
          body: createReadStream(file.filepath),
        });
        ctx.redirect(`/dashboard/contacts/imports/${contactImport.id}`);
        ctx.status = 303;
      } catch (error) {
        // The import service's refusals (storage not configured, too large, Temporal away) are the person's to read.
        if (!(error instanceof AppError)) throw error;
        return again(error.status, error.message);
      }
    });

    async function findImport(ctx: DashboardContext) {
      const id = pathId(ctx);
      try {
        if (!isId(id)) throw new AppError('not_found', 'no such import');
        return await contactImports.getImport(kit.signedInOf(ctx).orgId, id.toLowerCase());
      } catch (error) {
        if (error instanceof AppError && error.code === 'not_found') {
          kit.notFound(ctx, 'contact import');
          return null;
        }
        throw error;
      }
    }

    router.get('/contacts/imports/:id', kit.requireSession, async (ctx) => {
      const found = await findImport(ctx);
      if (!found) return;
      // The Refresh header reloads the page like <meta http-equiv="refresh"> (no script needed).
      if (isImportRunning(found)) ctx.set('Refresh', String(IMPORT_RELOAD_SECONDS));
      kit.send(ctx, 200, importPage({ signedIn: kit.signedInOf(ctx), contactImport: found }));
    });

    router.get('/contacts/imports/:id/errors.csv', kit.requireSession, async (ctx) => {
      const found = await findImport(ctx);
      if (!found) return;
      const stream = await contactImports.errorReport(found.orgId, found.id, { escapeFormulas: true });
      ctx.type = 'text/csv; charset=utf-8';
      ctx.set('Content-Disposition', `attachment; filename="import-${found.id}-errors.csv"`);
      ctx.body = stream;
    });
  };
}
