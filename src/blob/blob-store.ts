import { createHash } from 'node:crypto';
import { Readable, Transform, type TransformCallback } from 'node:stream';

/**
 * Where message bytes live: raw inbound messages, their attachments, uploaded attachments,
 * contact import files and the transient copies of inline attachments of a send. Keys are
 * `/`-separated paths of `[A-Za-z0-9._-]` segments chosen by Herald (never by a client). Bytes
 * never travel through Temporal payloads or the database; workflows pass keys.
 *
 * Two implementations with the same contract (test/unit/blob-store-contract.ts): a directory
 * (src/blob/fs-blob-store.ts) and an S3-compatible bucket (src/blob/s3-blob-store.ts), chosen
 * by BLOB_STORE (src/blob/open-blob-store.ts). Every process that reads or writes blobs (api,
 * worker, smtp) must be configured with the same store.
 */
export interface BlobStore {
  /** Where the blobs live, for logs and errors (never a credential). */
  readonly description: string;
  /**
   * Stores `body` under `key` atomically: readers see the whole blob or nothing. With
   * `exactBytes` the write fails (and leaves nothing) unless exactly that many bytes arrive;
   * with `maxBytes` it fails as soon as more arrive.
   */
  put(key: string, body: Readable | Buffer, limits?: BlobLimits): Promise<StoredBlob>;
  /** A stream of the blob's bytes (from byte `start`, 0 by default); rejects with BlobNotFoundError when absent. */
  get(key: string, options?: { start?: number }): Promise<Readable>;
  /** The blob's size, or null when absent. */
  size(key: string): Promise<number | null>;
  exists(key: string): Promise<boolean>;
  /** Removes the blob; absent is fine. */
  delete(key: string): Promise<void>;
  /** Resolves when the store can be used (the directory is writable, the bucket answers); else rejects with BlobStoreUnavailableError. */
  check(): Promise<void>;
  /** Releases its connections (the process is stopping). */
  close(): void;
}

export interface BlobLimits {
  exactBytes?: number;
  maxBytes?: number;
}

export interface StoredBlob {
  key: string;
  sizeBytes: number;
  /** Hex SHA-256 of the bytes. */
  sha256: string;
}

export class BlobNotFoundError extends Error {
  readonly key: string;
  constructor(key: string) {
    super(`blob not found: ${key}`);
    this.key = key;
    this.name = 'BlobNotFoundError';
  }
}

/** The body was longer than maxBytes/exactBytes, or shorter than exactBytes. */
export class BlobSizeError extends Error {
  readonly reason: 'too_large' | 'too_short';
  readonly receivedBytes: number;
  constructor(reason: 'too_large' | 'too_short', receivedBytes: number) {
    super(reason === 'too_large' ? 'blob exceeds its size limit' : `blob ended after ${receivedBytes} bytes`);
    this.reason = reason;
    this.receivedBytes = receivedBytes;
    this.name = 'BlobSizeError';
  }
}

/** The store cannot be used: the start-up check failed (missing bucket, refused credentials, unreachable endpoint, unwritable directory). */
export class BlobStoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BlobStoreUnavailableError';
  }
}

const KEY_PATTERN = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;

export function assertBlobKey(key: string): void {
  if (!KEY_PATTERN.test(key) || key.split('/').some((segment) => segment === '.' || segment === '..')) {
    throw new Error(`invalid blob key: ${JSON.stringify(key)}`);
  }
}

/**
 * Counts and hashes bytes on their way into a store, failing as soon as more than the limits
 * allow arrive, and at the end when fewer than `exactBytes` did: the store then discards what
 * it wrote, so a blob under a key always has the length its writer promised.
 */
export class MeteredStream extends Transform {
  bytes = 0;
  readonly hash = createHash('sha256');
  private readonly limit: number;
  private readonly exactBytes: number | undefined;
  constructor(limits: BlobLimits) {
    super();
    this.limit = Math.min(limits.exactBytes ?? Infinity, limits.maxBytes ?? Infinity);
    this.exactBytes = limits.exactBytes;
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) {
      callback(new BlobSizeError('too_large', this.bytes));
      return;
    }
    this.hash.update(chunk);
    callback(null, chunk);
  }
  override _flush(callback: TransformCallback): void {
    if (this.exactBytes !== undefined && this.bytes !== this.exactBytes) callback(new BlobSizeError('too_short', this.bytes));
    else callback();
  }
  /** What was stored, once the stream has ended. */
  stored(key: string): StoredBlob {
    return { key, sizeBytes: this.bytes, sha256: this.hash.digest('hex') };
  }
}

/** A put's body as a stream. */
export function bodyStream(body: Readable | Buffer): Readable {
  return Buffer.isBuffer(body) ? Readable.from([body]) : body;
}

/** Reads a whole blob into memory; for small blobs (tests, short text parts) only. */
export async function readBlob(store: BlobStore, key: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await store.get(key)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
