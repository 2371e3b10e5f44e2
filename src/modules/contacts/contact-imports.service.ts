import type { Readable } from 'node:stream';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { ContactImport } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { BlobStore } from '../../blob/blob-store.ts';
import type { Config } from '../../config.ts';
import { AppError } from '../../errors.ts';
import { createUploadUrlSigner } from '../attachments/upload-url.ts';
import { lockStaticSegment } from '../segments/membership.repo.ts';
import type { CsvOptions } from './csv.ts';
import { importErrorReport } from './import-error-report.ts';
import {
  importUploadClaim,
  receiveImportUpload,
  unavailable,
  type IncomingImportUpload,
  type UploadDeps,
} from './receive-import-upload.ts';

export { IMPORT_REPORT_COLUMNS } from './import-error-report.ts';
export type { IncomingImportUpload } from './receive-import-upload.ts';

/** How long the signed upload URL of a new import works. */
const UPLOAD_URL_TTL_MS = 60 * 60_000;

function notFound(id: string): AppError {
  return new AppError('not_found', `No contact import ${id} in this workspace.`);
}

/**
 * CSV imports of contacts (docs/contacts-import.md): POST /contacts/imports records an import
 * awaiting its file and signs an upload URL; the signed PUT streams the file to the blob store
 * and starts the import workflow (validate the whole file, then upsert its rows in batches:
 * receive-import-upload.ts); GET shows progress and the counts, and the error report lists
 * every skipped row (import-error-report.ts).
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

  function usable(): UploadDeps {
    if (!blobs) throw unavailable('File storage is not configured on this server (BLOB_DIR)');
    if (!signer) throw unavailable('HERALD_ENCRYPTION_KEY is not set, so upload URLs cannot be signed');
    return { orm, store: blobs, sign: signer, temporal, config, now };
  }

  async function find(orgId: string, id: string): Promise<ContactImport> {
    const found = await scopeToOrg(orm.em, orgId).findOne(ContactImport, { id });
    if (!found) throw notFound(id);
    return found;
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
      return { contactImport, uploadUrl: sign.url(importUploadClaim(contactImport.id, contactImport.uploadExpiresAt)) };
    },

    async getImport(orgId: string, id: string): Promise<ContactImport> {
      return find(orgId, id);
    },

    async listImports(orgId: string, page: { limit: number; after?: KeysetPosition | undefined }) {
      return findKeysetPage(scopeToOrg(orm.em, orgId), ContactImport, {}, page);
    },

    /** The skipped rows of an import as CSV (see import-error-report.ts); 404 for another workspace's import. */
    async errorReport(orgId: string, id: string, csv: CsvOptions): Promise<Readable> {
      await find(orgId, id);
      return importErrorReport(scopeToOrg(orm.em.fork(), orgId), id, csv);
    },

    /** The signed PUT of an import's file (see receive-import-upload.ts); 503 without blob storage or an encryption key. */
    async receiveUpload(request: IncomingImportUpload): Promise<ContactImport> {
      return receiveImportUpload(usable(), request);
    },
  };
}

export type ContactImportsService = ReturnType<typeof createContactImportsService>;
