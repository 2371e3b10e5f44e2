import { randomBytes } from 'node:crypto';
import { constants, createReadStream, createWriteStream } from 'node:fs';
import { access, mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { assertBlobKey, BlobNotFoundError, BlobStoreUnavailableError, bodyStream, MeteredStream, type BlobStore } from './blob-store.ts';

/**
 * The filesystem blob store (BLOB_STORE=filesystem, BLOB_DIR). A put writes
 * `<key>.<random>.partial` next to the target, fsyncs it and renames it into place, so a crash
 * never leaves half a blob under a key. Every process that reads or writes blobs (api, worker,
 * smtp) must see the same directory: one machine, or a shared volume.
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
    description: `directory ${root}`,

    async put(key, body, limits = {}) {
      const target = pathOf(key);
      await mkdir(dirname(target), { recursive: true });
      const partial = `${target}.${randomBytes(6).toString('hex')}.partial`;
      const meter = new MeteredStream(limits);
      try {
        await pipeline(bodyStream(body), meter, createWriteStream(partial, { flags: 'wx' }));
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
      return meter.stored(key);
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

    async check() {
      try {
        await mkdir(root, { recursive: true });
        await access(root, constants.W_OK | constants.R_OK);
      } catch (error) {
        throw new BlobStoreUnavailableError(`the blob directory ${root} (BLOB_DIR) cannot be used: ${(error as Error).message}`, {
          cause: error,
        });
      }
    },

    close() {},
  };
}
