import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/**
 * Where message bytes live: raw inbound messages, their attachments, uploaded attachments and
 * the transient copies of inline attachments of a send. Keys are `/`-separated paths of
 * `[A-Za-z0-9._-]` segments chosen by Herald (never by a client). Bytes never travel through
 * Temporal payloads or the database; workflows pass keys.
 */
export interface BlobStore {
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

const KEY_PATTERN = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;

export function assertBlobKey(key: string): void {
  if (!KEY_PATTERN.test(key) || key.split('/').some((segment) => segment === '.' || segment === '..')) {
    throw new Error(`invalid blob key: ${JSON.stringify(key)}`);
  }
}

/** Counts and hashes bytes on their way through, failing once past `limit`. */
class MeteredStream extends Transform {
  bytes = 0;
  readonly hash = createHash('sha256');
  private readonly limit: number;
  constructor(limit: number) {
    super();
    this.limit = limit;
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
}

/**
 * The filesystem blob store (BLOB_DIR). A put writes `<key>.<random>.partial` next to the
 * target, fsyncs it and renames it into place, so a crash never leaves half a blob under a key.
 * Every process that reads or writes blobs (api, worker, smtp) must see the same directory.
 */
export function createFsBlobStore(rootDir: string): BlobStore {
  const root = resolve(rootDir);
  const pathOf = (key: string): string => {
    assertBlobKey(key);
    const path = join(root, ...key.split('/'));
    if (!path.startsWith(root + sep)) throw new Error(`invalid blob key: ${key}`);
    return path;
  };

  return {
    async put(key, body, limits = {}) {
      const target = pathOf(key);
      await mkdir(dirname(target), { recursive: true });
      const partial = `${target}.${randomBytes(6).toString('hex')}.partial`;
      const limit = Math.min(limits.exactBytes ?? Infinity, limits.maxBytes ?? Infinity);
      const meter = new MeteredStream(limit);
      const source = Buffer.isBuffer(body) ? Readable.from([body]) : body;
      try {
        await pipeline(source, meter, createWriteStream(partial, { flags: 'wx' }));
        if (limits.exactBytes !== undefined && meter.bytes !== limits.exactBytes) {
          throw new BlobSizeError('too_short', meter.bytes);
        }
        const handle = await open(partial, 'r');
        try {
          await handle.sync();
        } finally {
          await handle.close();
        }
        await rename(partial, target);
      } catch (error) {
        await rm(partial, { force: true });
        throw error;
      }
      return { key, sizeBytes: meter.bytes, sha256: meter.hash.digest('hex') };
    },

    async get(key, options = {}) {
      const path = pathOf(key);
      try {
        await stat(path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new BlobNotFoundError(key);
        throw error;
      }
      return createReadStream(path, { start: options.start ?? 0 });
    },

    async size(key) {
      try {
        return (await stat(pathOf(key))).size;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw error;
      }
    },

    async exists(key) {
      return (await this.size(key)) !== null;
    },

    async delete(key) {
      await rm(pathOf(key), { force: true });
    },
  };
}

/** Reads a whole blob into memory; for small blobs (tests, short text parts) only. */
export async function readBlob(store: BlobStore, key: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await store.get(key)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The configured blob store, or null when BLOB_DIR is empty (attachments and inbound answer 503/451). */
export function createBlobStore(config: { blobDir: string }): BlobStore | null {
  return config.blobDir.trim() === '' ? null : createFsBlobStore(config.blobDir);
}
