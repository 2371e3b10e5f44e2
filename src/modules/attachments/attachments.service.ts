import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { MikroORM } from '@mikro-orm/postgresql';
import { AttachmentUpload } from '../../../db/entities/index.ts';
import { newId } from '../../../db/ids.ts';
import { ALL_TENANTS, scopeToOrg } from '../../../db/orm.ts';
import { BlobSizeError, type BlobStore, type StoredBlob } from '../../blob/blob-store.ts';
import type { Config } from '../../config.ts';
import { ringOf, type KeyRing } from '../../crypto/signing-keys.ts';
import { AppError } from '../../errors.ts';
import {
  attachmentProblems,
  attemptBlobKey,
  MAX_ATTACHMENT_BYTES,
  reservedBlobKey,
  UPLOAD_RETENTION_MS,
  UPLOAD_URL_TTL_SECONDS,
} from './attachments.fns.ts';
import { claimStaleUploads, deleteUploadRows } from './attachments.repo.ts';
import type { CreateAttachmentUploadInput } from './attachments.schemas.ts';
import { createUploadUrlSigner, invalidUploadSignature, isClientAbort, parseUploadExpiry, type UploadUrlSigner } from './upload-url.ts';

/** What the PUT of the bytes brings: the URL's parts, the two signed headers and the body stream. */
export interface IncomingUpload {
  attachmentId: string;
  expires: string | undefined;
  sig: string | undefined;
  contentType: string | undefined;
  contentLength: string | undefined;
  /** Whether the request carries a Transfer-Encoding (a body of undeclared length). */
  hasTransferEncoding: boolean;
  body: Readable;
}

export interface AttachmentsServiceDeps {
  orm: MikroORM;
  /** Null when no blob store is configured (BLOB_DIR empty): uploads answer 503. */
  blobs: BlobStore | null;
  /** HERALD_ENCRYPTION_KEY or its ring (newest first); upload URLs are signed with a key derived from the newest and verified with any (none → 503). */
  encryptionKey: KeyRing | undefined;
  publicUrl: string;
  urlTtlSeconds?: number;
  now?: () => Date;
}

/** Errors of a client whose connection ended before the declared bytes arrived. */

function storageUnavailable(): AppError {
  return new AppError('service_unavailable', 'Attachment storage is not configured on this server; retry later.', {
    reason: 'ATTACHMENT_STORAGE_UNAVAILABLE',
  });
}

function signingUnavailable(): AppError {
  return new AppError(
    'service_unavailable',
    'Upload URLs are signed with a key derived from the encryption key, which is not configured on this server; retry later.',
    { reason: 'ENCRYPTION_UNAVAILABLE' },
  );
}

const badSignature = () => invalidUploadSignature('POST /api/v1/outbox/attachments');

function headerProblem(header: string, type: string, message: string, reason: string): AppError {
  return new AppError('invalid_request', `Invalid header ${header}: ${message}.`, {
    reason,
    fields: [{ path: header, location: 'header', type, message }],
  });
}

/**
 * Attachments uploaded out of band: POST /outbox/attachments records a pending upload and signs
 * a PUT URL for exactly its content type and length; the PUT (src/modules/attachments/
 * uploads.router.ts) streams the bytes into the blob store; the cleanup Schedule deletes uploads
 * unused for 7 days. Sends reference uploads by id (status uploaded) and set referencedAt.
 */
export function createAttachmentsService(deps: AttachmentsServiceDeps) {
  const { orm, blobs } = deps;
  const now = deps.now ?? (() => new Date());
  const ttlSeconds = deps.urlTtlSeconds ?? UPLOAD_URL_TTL_SECONDS;
  const signer: UploadUrlSigner | null =
    deps.encryptionKey && ringOf(deps.encryptionKey).length > 0 ? createUploadUrlSigner(deps.encryptionKey, deps.publicUrl) : null;

  const usable = (): { store: BlobStore; sign: UploadUrlSigner } => {
    if (!blobs) throw storageUnavailable();
    if (!signer) throw signingUnavailable();
    return { store: blobs, sign: signer };
  };

  return {
    /**
     * Records a pending upload and returns it with its signed PUT URL (valid for an hour).
     * 400 INVALID_ATTACHMENT for a bad file name or a refused content type, 413
     * ATTACHMENT_TOO_LARGE over 12 MB, 503 without blob storage or an encryption key.
     */
    async createUpload(orgId: string, input: CreateAttachmentUploadInput): Promise<{ upload: AttachmentUpload; uploadUrl: string }> {
      const { sign } = usable();
      const problems = attachmentProblems(input);
      if (problems.length > 0) {
        const [first] = problems;
        throw new AppError('invalid_request', `Invalid body.${first!.path}: ${first!.message}.`, {
          reason: 'INVALID_ATTACHMENT',
          fields: problems,
        });
      }
      if (input.size_bytes > MAX_ATTACHMENT_BYTES) {
        throw new AppError('payload_too_large', `An attachment may be at most ${MAX_ATTACHMENT_BYTES} bytes (12 MB).`, {
          reason: 'ATTACHMENT_TOO_LARGE',
          max_bytes: MAX_ATTACHMENT_BYTES,
          fields: [{ path: 'size_bytes', location: 'body', type: 'max_value', message: `must be at most ${MAX_ATTACHMENT_BYTES}` }],
        });
      }
      const id = newId();
      const expires = Math.floor(now().getTime() / 1000) + ttlSeconds;
      const em = scopeToOrg(orm.em, orgId);
      const upload = em.create(AttachmentUpload, {
        id,
        orgId,
        filename: input.filename,
        contentType: input.content_type,
        sizeBytes: input.size_bytes,
        status: 'pending',
        blobKey: reservedBlobKey(orgId, id),
        sha256: null,
        expiresAt: new Date(expires * 1000),
        uploadedAt: null,
        referencedAt: null,
      });
      await em.flush();
      const uploadUrl = sign.url({ attachmentId: id, contentType: input.content_type, sizeBytes: input.size_bytes, expires });
      return { upload, uploadUrl };
    },

    /**
     * Receives the bytes of a PUT to a signed upload URL. The signature (constant-time) and the
     * expiry come first: 403 INVALID_SIGNATURE or UPLOAD_URL_EXPIRED, the same for an unknown id.
     * Then 409 when the bytes are already there, 400 when Content-Type is not exactly the signed
     * one or Content-Length is missing or not the signed size. The body is streamed into the blob
     * store with the exact length enforced (never buffered), under a key of its own, and the row
     * turns uploaded only if it still was pending (a concurrent PUT that lost gets 409 and its
     * bytes are removed).
     */
    async receiveUpload(request: IncomingUpload): Promise<AttachmentUpload> {
      const { store, sign } = usable();
      const expires = parseUploadExpiry(request.expires);
      if (expires === null || !/^[0-9a-f]{24}$/.test(request.attachmentId)) throw badSignature();
      const found = await orm.em.fork().findOne(AttachmentUpload, { id: request.attachmentId }, ALL_TENANTS);
      const signed = (upload: AttachmentUpload) =>
        sign.verify({ attachmentId: upload.id, contentType: upload.contentType, sizeBytes: upload.sizeBytes, expires }, request.sig ?? '');
      if (!found || !signed(found)) throw badSignature();
      if (expires * 1000 <= now().getTime()) {
        throw new AppError('forbidden', 'The upload URL has expired; create a new upload with POST /api/v1/outbox/attachments.', {
          reason: 'UPLOAD_URL_EXPIRED',
        });
      }
      if (found.status !== 'pending') {
        throw new AppError('conflict', 'The bytes of this attachment were already uploaded.', { reason: 'ALREADY_UPLOADED' });
      }
      if (request.contentType !== found.contentType) {
        throw headerProblem('Content-Type', 'content_type', `must be exactly ${found.contentType}, as signed`, 'CONTENT_TYPE_MISMATCH');
      }
      if (request.hasTransferEncoding || request.contentLength === undefined) {
        throw headerProblem(
          'Content-Length',
          'content_length',
          `is required (${found.sizeBytes}); chunked uploads are not accepted`,
          'CONTENT_LENGTH_REQUIRED',
        );
      }
      if (request.contentLength !== String(found.sizeBytes)) {
        throw headerProblem('Content-Length', 'content_length', `must be exactly ${found.sizeBytes}, as signed`, 'CONTENT_LENGTH_MISMATCH');
      }

      const key = attemptBlobKey(found.orgId, found.id, randomBytes(6).toString('hex'));
      let stored: StoredBlob;
      try {
        stored = await store.put(key, request.body, { exactBytes: found.sizeBytes });
      } catch (error) {
        if (error instanceof BlobSizeError || isClientAbort(error)) {
          throw new AppError('invalid_request', `The upload ended before its ${found.sizeBytes} bytes arrived; nothing was stored.`, {
            reason: 'UPLOAD_INCOMPLETE',
          });
        }
        throw error;
      }

      const em = scopeToOrg(orm.em, found.orgId);
      let updated = 0;
      try {
        updated = await em.nativeUpdate(
          AttachmentUpload,
          { id: found.id, status: 'pending' },
          { status: 'uploaded', blobKey: key, sha256: stored.sha256, uploadedAt: now() },
        );
      } finally {
        if (updated === 0) await store.delete(key);
      }
      if (updated === 0) {
        throw new AppError('conflict', 'The bytes of this attachment were already uploaded.', { reason: 'ALREADY_UPLOADED' });
      }
      return em.findOneOrFail(AttachmentUpload, { id: found.id });
    },

    /**
     * Deletes one batch of uploads (all workspaces) unused for `retentionMs` (default 7 days)
     * since they were last referenced, or created when never referenced, and read by no open
     * email: the blob first, then the row, in one transaction holding the rows locked. Returns
     * how many were deleted; fewer than `batchSize` means none are left.
     */
    async deleteStaleUploads(options: { retentionMs?: number; batchSize?: number } = {}): Promise<{ deleted: number }> {
      const cutoff = new Date(now().getTime() - (options.retentionMs ?? UPLOAD_RETENTION_MS));
      return orm.em.fork().transactional(async (em) => {
        const stale = await claimStaleUploads(em, cutoff, options.batchSize ?? 100);
        for (const upload of stale) await blobs?.delete(upload.blob_key);
        await deleteUploadRows(
          em,
          stale.map((upload) => upload.id),
        );
        return { deleted: stale.length };
      });
    },
  };
}

export type AttachmentsService = ReturnType<typeof createAttachmentsService>;

/** The service as every process builds it from its configuration (HERALD_ENCRYPTION_KEY, PUBLIC_URL) and its blob store. */
export function createAttachmentsServiceFromConfig(
  orm: MikroORM,
  config: Pick<Config, 'encryptionKeys' | 'http'>,
  blobs: BlobStore | null,
) {
  return createAttachmentsService({
    orm,
    blobs,
    encryptionKey: config.encryptionKeys,
    publicUrl: config.http.publicUrl,
  });
}
