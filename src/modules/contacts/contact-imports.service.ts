import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { MikroORM } from '@mikro-orm/postgresql';
import { WorkflowIdConflictPolicy, type Client } from '@temporalio/client';
import { ContactImport, ContactImportError } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { ALL_TENANTS, scopeToOrg } from '../../../db/orm.ts';
import {
  CONTACT_IMPORT_KIND,
  CONTACT_IMPORT_WORKFLOW,
  contactImportWorkflowId,
  type ContactImportInput,
} from '../../../workflows/contact-imports.ts';
import { BlobSizeError, type BlobStore } from '../../blob/blob-store.ts';
import type { Config } from '../../config.ts';
import { AppError } from '../../errors.ts';
import { csvStream, type CsvOptions } from './csv.ts';
import { workflowSearchAttributes } from '../../temporal/search-attributes.ts';
import { createUploadUrlSigner, invalidUploadSignature, isClientAbort, parseUploadExpiry } from '../attachments/upload-url.ts';
import { lockStaticSegment } from '../segments/membership.repo.ts';
import { IMPORT_LIMITS } from './contact-import.fns.ts';

/** How long the signed upload URL of a new import works. */
const UPLOAD_URL_TTL_MS = 60 * 60_000;
/** Error rows read per query while the report is streamed. */
const REPORT_PAGE = 1_000;
export const IMPORT_REPORT_COLUMNS = ['row', 'line', 'email', 'reason', 'message'] as const;

export interface IncomingImportUpload {
  importId: string;
  expires: string | undefined;
  sig: string | undefined;
  contentType: string | undefined;
  contentLength: string | undefined;
  body: Readable;
}

function notFound(id: string): AppError {
  return new AppError('not_found', `No contact import ${id} in this workspace.`);
}

const badSignature = () => invalidUploadSignature('POST /api/v1/contacts/imports');

function unavailable(what: string): AppError {
  return new AppError('service_unavailable', `${what}; retry later.`, { reason: 'IMPORT_UNAVAILABLE' });
}

/** The key of an uploaded file: per workspace and import, with a per-attempt suffix. */
function importBlobKey(orgId: string, importId: string): string {
  return `contact-imports/${orgId}/${importId}/${randomBytes(6).toString('hex')}.csv`;
}

/**
 * CSV imports of contacts (docs/contacts-import.md): POST /contacts/imports records an import
 * awaiting its file and signs an upload URL; the signed PUT streams the file to the blob store
 * and starts the import workflow (validate the whole file, then upsert its rows in batches);
 * GET shows progress and the counts, and the error report lists every skipped row.
 */
export function createContactImportsService(deps: {
  orm: MikroORM;
  blobs: BlobStore | null;
  temporal: Client;
  config: Pick<Config, 'encryptionKeys' | 'http' | 'temporal'>;
  now?: () => Date;
}) {
  const { orm, blobs, temporal, config } = deps;
  const now = deps.now ?? (() => new Date());
  const signer =
    config.encryptionKeys.length > 0 ? createUploadUrlSigner(config.encryptionKeys, config.http.publicUrl, 'contact-import') : null;
  const claimOf = (id: string, expiresAt: Date) => ({
    attachmentId: id,
    contentType: 'text/csv',
    sizeBytes: 0,
    expires: Math.floor(expiresAt.getTime() / 1000),
  });

  function usable(): { store: BlobStore; sign: NonNullable<typeof signer> } {
    if (!blobs) throw unavailable('File storage is not configured on this server (BLOB_DIR)');
    if (!signer) throw unavailable('HERALD_ENCRYPTION_KEY is not set, so upload URLs cannot be signed');
    return { store: blobs, sign: signer };
  }

  async function find(orgId: string, id: string): Promise<ContactImport> {
    const found = await scopeToOrg(orm.em, orgId).findOne(ContactImport, { id });
    if (!found) throw notFound(id);
    return found;
  }

  /** Starts (or finds) the import's workflow; the import is then in its hands. */
  async function startWorkflow(contactImport: ContactImport): Promise<void> {
    const input: ContactImportInput = { orgId: contactImport.orgId, importId: contactImport.id };
    await temporal.workflow.start(CONTACT_IMPORT_WORKFLOW, {
      workflowId: contactImportWorkflowId(contactImport.id),
      taskQueue: config.temporal.taskQueue,
      args: [input],
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
      typedSearchAttributes: workflowSearchAttributes(contactImport.orgId, CONTACT_IMPORT_KIND),
    });
  }

  return {
    /**
     * Records an import awaiting its file; its upload URL works for an hour. With `segmentId`,
     * the segment must be a static segment of the workspace (404, 409 SEGMENT_NOT_STATIC).
     */
    async createImport(
      orgId: string,
      input: { filename?: string | undefined; segmentId?: string | undefined },
    ): Promise<{ contactImport: ContactImport; uploadUrl: string }> {
      const { sign } = usable();
      const em = scopeToOrg(orm.em, orgId);
      const segmentId = input.segmentId?.toLowerCase() ?? null;
      if (segmentId) await lockStaticSegment(orm.em.fork(), orgId, segmentId);
      const contactImport = em.create(ContactImport, {
        orgId,
        segmentId,
        filename: input.filename ?? null,
        uploadExpiresAt: new Date(now().getTime() + UPLOAD_URL_TTL_MS),
      });
      await em.flush();
      return { contactImport, uploadUrl: sign.url(claimOf(contactImport.id, contactImport.uploadExpiresAt)) };
    },

    async getImport(orgId: string, id: string): Promise<ContactImport> {
      return find(orgId, id);
    },

    async listImports(orgId: string, page: { limit: number; after?: KeysetPosition | undefined }) {
      return findKeysetPage(scopeToOrg(orm.em, orgId), ContactImport, {}, page);
    },

    /**
     * The skipped rows of an import as CSV (row, line, email, reason, message), in row order,
     * streamed from the database a page at a time; cells that could start a spreadsheet
     * formula escaped unless `csv` says otherwise.
     */
    async errorReport(orgId: string, id: string, csv: CsvOptions): Promise<Readable> {
      await find(orgId, id);
      const em = scopeToOrg(orm.em.fork(), orgId);
      async function* records() {
        for (let after = 0; ;) {
          const rows = await em.find(
            ContactImportError,
            { importId: id, row: { $gt: after } },
            { orderBy: { row: 'asc' }, limit: REPORT_PAGE },
          );
          for (const row of rows) yield [row.row, row.line, row.email, row.reason, row.message];
          if (rows.length < REPORT_PAGE) return;
          after = rows.at(-1)!.row;
          em.clear();
        }
      }
      return csvStream(IMPORT_REPORT_COLUMNS, records(), csv);
    },

    /**
     * The signed PUT of an import's file: streams it to the blob store (at most
     * IMPORT_LIMITS.maxBytes) and hands the import to its workflow. 403 for a bad or lapsed
     * URL, 409 when the file was already uploaded, 413 past the size limit, 503 when the
     * workflow cannot be started (the upload can then be retried with the same URL).
     */
    async receiveUpload(request: IncomingImportUpload): Promise<ContactImport> {
      const { store, sign } = usable();
      const expires = parseUploadExpiry(request.expires);
      if (expires === null || !/^[0-9a-f]{24}$/.test(request.importId)) throw badSignature();
      const found = await orm.em.fork().findOne(ContactImport, { id: request.importId }, ALL_TENANTS);
      if (
        !found ||
        !sign.verify(claimOf(found.id, new Date(expires * 1000)), request.sig ?? '') ||
        expires !== claimOf(found.id, found.uploadExpiresAt).expires
      ) {
        throw badSignature();
      }
      if (found.uploadExpiresAt.getTime() <= now().getTime()) {
        throw new AppError('forbidden', 'The upload URL has expired; create a new import with POST /api/v1/contacts/imports.', {
          reason: 'UPLOAD_URL_EXPIRED',
        });
      }
      if (found.status !== 'awaiting_upload') {
        throw new AppError('conflict', 'The file of this import was already uploaded.', { reason: 'ALREADY_UPLOADED' });
      }
      if (request.contentType?.toLowerCase().startsWith('multipart/')) {
        throw new AppError(
          'invalid_request',
          'Send the CSV file itself as the body (curl --data-binary @file.csv), not a multipart form.',
          {
            reason: 'UNSUPPORTED_CONTENT_TYPE',
            fields: [{ path: 'Content-Type', location: 'header', type: 'content_type', message: 'must not be multipart' }],
          },
        );
      }
      const tooLarge = () =>
        new AppError('payload_too_large', `A contact import file is at most ${IMPORT_LIMITS.maxBytes} bytes.`, {
          reason: 'REQUEST_TOO_LARGE',
          limit_bytes: IMPORT_LIMITS.maxBytes,
        });
      if (request.contentLength !== undefined && Number(request.contentLength) > IMPORT_LIMITS.maxBytes) throw tooLarge();

      const key = importBlobKey(found.orgId, found.id);
      let stored;
      try {
        stored = await store.put(key, request.body, { maxBytes: IMPORT_LIMITS.maxBytes });
      } catch (error) {
        if (error instanceof BlobSizeError) throw tooLarge();
        if (isClientAbort(error)) {
          throw new AppError('invalid_request', 'The upload ended before the whole file arrived; nothing was stored.', {
            reason: 'UPLOAD_INCOMPLETE',
          });
        }
        throw error;
      }

      const em = scopeToOrg(orm.em, found.orgId);
      const taken = await em.nativeUpdate(
        ContactImport,
        { id: found.id, status: 'awaiting_upload' },
        { status: 'validating', blobKey: key, sizeBytes: stored.sizeBytes, sha256: stored.sha256, uploadedAt: now(), updatedAt: now() },
      );
      if (taken === 0) {
        await store.delete(key);
        throw new AppError('conflict', 'The file of this import was already uploaded.', { reason: 'ALREADY_UPLOADED' });
      }
      const contactImport = await em.findOneOrFail(ContactImport, { id: found.id });
      try {
        await startWorkflow(contactImport);
      } catch (error) {
        // Undo, so the same URL can be used again once Temporal answers.
        await em.nativeUpdate(
          ContactImport,
          { id: found.id, status: 'validating' },
          { status: 'awaiting_upload', blobKey: null, sizeBytes: null, sha256: null, uploadedAt: null, updatedAt: now() },
        );
        await store.delete(key);
        throw unavailable(`The import could not be started (${(error as Error).message})`);
      }
      return contactImport;
    },
  };
}

export type ContactImportsService = ReturnType<typeof createContactImportsService>;
