import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { MikroORM } from '@mikro-orm/postgresql';
import { WorkflowIdConflictPolicy, type Client } from '@temporalio/client';
import { ContactImport } from '../../../db/entities/index.ts';
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
import { workflowSearchAttributes } from '../../temporal/search-attributes.ts';
import { invalidUploadSignature, isClientAbort, parseUploadExpiry, type createUploadUrlSigner } from '../attachments/upload-url.ts';
import { IMPORT_LIMITS } from './contact-import.fns.ts';

export interface IncomingImportUpload {
  importId: string;
  expires: string | undefined;
  sig: string | undefined;
  contentType: string | undefined;
  contentLength: string | undefined;
  body: Readable;
}

/** What receiving an import's file needs: the blob store and URL signer must be configured (see createContactImportsService). */
export interface UploadDeps {
  orm: MikroORM;
  store: BlobStore;
  sign: ReturnType<typeof createUploadUrlSigner>;
  temporal: Client;
  config: Pick<Config, 'temporal'>;
  now: () => Date;
}

const badSignature = () => invalidUploadSignature('POST /api/v1/contacts/imports');

export function unavailable(what: string): AppError {
  return new AppError('service_unavailable', `${what}; retry later.`, { reason: 'IMPORT_UNAVAILABLE' });
}

/** What an import's upload URL signs: the import, as a CSV upload, until `expiresAt`. */
export const importUploadClaim = (id: string, expiresAt: Date) => ({
  attachmentId: id,
  contentType: 'text/csv',
  sizeBytes: 0,
  expires: Math.floor(expiresAt.getTime() / 1000),
});

/** The key of an uploaded file: per workspace and import, with a per-attempt suffix. */
function importBlobKey(orgId: string, importId: string): string {
  return `contact-imports/${orgId}/${importId}/${randomBytes(6).toString('hex')}.csv`;
}

/** Starts (or finds) the import's workflow; the import is then in its hands. */
async function startImportWorkflow(deps: UploadDeps, contactImport: ContactImport): Promise<void> {
  const input: ContactImportInput = { orgId: contactImport.orgId, importId: contactImport.id };
  await deps.temporal.workflow.start(CONTACT_IMPORT_WORKFLOW, {
    workflowId: contactImportWorkflowId(contactImport.id),
    taskQueue: deps.config.temporal.taskQueue,
    args: [input],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    typedSearchAttributes: workflowSearchAttributes(contactImport.orgId, CONTACT_IMPORT_KIND),
  });
}

/**
 * The signed PUT of an import's file: streams it to the blob store (at most
 * IMPORT_LIMITS.maxBytes) and hands the import to its workflow. 403 for a bad or lapsed
 * URL, 409 when the file was already uploaded, 413 past the size limit, 503 when the
 * workflow cannot be started (the upload can then be retried with the same URL).
 */
export async function receiveImportUpload(deps: UploadDeps, request: IncomingImportUpload): Promise<ContactImport> {
  const { orm, store, sign, now } = deps;
  const expires = parseUploadExpiry(request.expires);
  if (expires === null || !/^[0-9a-f]{24}$/.test(request.importId)) throw badSignature();
  const found = await orm.em.fork().findOne(ContactImport, { id: request.importId }, ALL_TENANTS);
  if (
    !found ||
    !sign.verify(importUploadClaim(found.id, new Date(expires * 1000)), request.sig ?? '') ||
    expires !== importUploadClaim(found.id, found.uploadExpiresAt).expires
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
    throw new AppError('invalid_request', 'Send the CSV file itself as the body (curl --data-binary @file.csv), not a multipart form.', {
      reason: 'UNSUPPORTED_CONTENT_TYPE',
      fields: [{ path: 'Content-Type', location: 'header', type: 'content_type', message: 'must not be multipart' }],
    });
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
    await startImportWorkflow(deps, contactImport);
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
}
