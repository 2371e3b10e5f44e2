import { Readable } from 'node:stream';
import { pipeline } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { S3Settings } from './blob-config.ts';
import { assertBlobKey, BlobNotFoundError, BlobStoreUnavailableError, bodyStream, MeteredStream, type BlobStore } from './blob-store.ts';

/** Bytes per part of a multipart upload (S3's minimum); a smaller body is one PutObject. */
const PART_BYTES = 5 * 1024 * 1024;
/** Parts of one put in flight at once: a put holds at most this many parts in memory. */
const PARTS_IN_FLIGHT = 2;

function statusOf(error: unknown): number | undefined {
  return error instanceof S3ServiceException ? error.$metadata.httpStatusCode : undefined;
}

const isAbsent = (error: unknown) => statusOf(error) === 404 || (error instanceof Error && ['NoSuchKey', 'NotFound'].includes(error.name));

/** Builds the SDK client: short connection timeout (a dead endpoint fails fast), checksums only where S3 requires them. */
export function createS3Client(settings: S3Settings): S3Client {
  return new S3Client({
    region: settings.region,
    ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
    forcePathStyle: settings.forcePathStyle,
    ...(settings.credentials ? { credentials: settings.credentials } : {}),
    // Flexible checksums (CRC32 on every upload) are not implemented by every S3-compatible server.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: { connectionTimeout: 5_000, socketTimeout: 120_000 },
  });
}

function unavailable(settings: S3Settings, where: string, error: unknown): BlobStoreUnavailableError {
  const status = statusOf(error);
  const name = error instanceof Error ? error.name : 'Error';
  const message = error instanceof Error ? error.message : String(error);
  let reason: string;
  if (status === 404 || name === 'NotFound' || name === 'NoSuchBucket') {
    reason = `the bucket "${settings.bucket}" does not exist there: create it (docs/blob-storage.md) or correct S3_BUCKET`;
  } else if (status === 403 || status === 401 || ['InvalidAccessKeyId', 'SignatureDoesNotMatch', 'AccessDenied'].includes(name)) {
    reason = `access to the bucket "${settings.bucket}" was refused (${name}): check S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY and the key's permissions`;
  } else if (status === 301 || name === 'PermanentRedirect') {
    reason = `the bucket "${settings.bucket}" is in another region than S3_REGION=${settings.region}`;
  } else if (status !== undefined) {
    reason = `the server answered ${status} ${name}: ${message}`;
  } else {
    reason = `it cannot be reached (${name}: ${message}); check S3_ENDPOINT and the network`;
  }
  return new BlobStoreUnavailableError(`the S3 blob store (${where}) cannot be used: ${reason}`, { cause: error });
}

/**
 * The S3-compatible blob store (BLOB_STORE=s3): each blob one object, `S3_KEY_PREFIX` + key.
 * A put streams the body through a meter (size limits, SHA-256) into lib-storage's Upload: one
 * PutObject below 5 MB, else a multipart upload of 5 MB parts; both make the object visible
 * whole and only once complete, so readers see the whole blob or nothing. A put that fails
 * (a limit crossed, the source broken, the server gone) aborts its multipart upload, leaving
 * no object and no parts (a lifecycle rule for incomplete uploads covers a process killed
 * mid-put: docs/blob-storage.md).
 */
export function createS3BlobStore(settings: S3Settings, client: S3Client = createS3Client(settings)): BlobStore {
  const { bucket } = settings;
  const where = `s3://${bucket}/${settings.keyPrefix} at ${settings.endpoint ?? `AWS ${settings.region}`}`;
  const objectKey = (key: string): string => {
    assertBlobKey(key);
    return settings.keyPrefix + key;
  };

  return {
    description: where,

    async put(key, body, limits = {}) {
      const Key = objectKey(key);
      const meter = new MeteredStream(limits);
      // A failing source destroys the meter, which fails the upload (and the other way round).
      pipeline(bodyStream(body), meter, () => {});
      const upload = new Upload({ client, params: { Bucket: bucket, Key, Body: meter }, partSize: PART_BYTES, queueSize: PARTS_IN_FLIGHT });
      try {
        await upload.done();
      } catch (error) {
        meter.destroy();
        throw error;
      }
      return meter.stored(key);
    },

    async get(key, options = {}) {
      const start = options.start ?? 0;
      try {
        const object = await client.send(
          new GetObjectCommand({ Bucket: bucket, Key: objectKey(key), ...(start > 0 ? { Range: `bytes=${start}-` } : {}) }),
        );
        return object.Body as Readable;
      } catch (error) {
        if (isAbsent(error)) throw new BlobNotFoundError(key);
        // A start at or past the end: nothing left to read (as a file read from there).
        if (statusOf(error) === 416) return Readable.from([]);
        throw error;
      }
    },

    async size(key) {
      try {
        const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: objectKey(key) }));
        return head.ContentLength ?? 0;
      } catch (error) {
        if (isAbsent(error)) return null;
        throw error;
      }
    },

    async exists(key) {
      return (await this.size(key)) !== null;
    },

    async delete(key) {
      try {
        await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: objectKey(key) }));
      } catch (error) {
        if (!isAbsent(error)) throw error;
      }
    },

    async check() {
      try {
        await client.send(new HeadBucketCommand({ Bucket: bucket }));
      } catch (error) {
        throw unavailable(settings, where, error);
      }
    },

    close() {
      client.destroy();
    },
  };
}
