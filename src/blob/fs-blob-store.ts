import { randomBytes } from 'node:crypto';
import { constants, createReadStream } from 'node:fs';
import { access, mkdir, open, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { assertBlobKey, BlobNotFoundError, BlobStoreUnavailableError, bodyStream, MeteredStream, type BlobStore } from './blob-store.ts';

/** Directories remembered as existing at most (then forgotten and found again). */
const MADE_DIRS_KEPT = 1_000;

/**
 * Opens new files for writing (`wx`), making their directory the first time this store writes
 * there, or again when it was removed since (the open then fails with ENOENT).
 */
function createPartialOpener(): (path: string) => Promise<FileHandle> {
  const madeDirs = new Set<string>();
  const makeDir = async (dir: string): Promise<void> => {
    await mkdir(dir, { recursive: true });
    if (madeDirs.size >= MADE_DIRS_KEPT) madeDirs.clear();
    madeDirs.add(dir);
  };
  return async (path) => {
    const dir = dirname(path);
    if (!madeDirs.has(dir)) await makeDir(dir);
    try {
      return await open(path, 'wx');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      await makeDir(dir);
      return open(path, 'wx');
    }
  };
}

/**
 * Streams chunks into an open file, fsyncs it and closes it (also on failure). A write may take
 * fewer bytes than given (a disk filling up): the rest follows, or the disk's error.
 */
async function writeSynced(
  handle: FileHandle,
  feed: (into: (chunks: AsyncIterable<Buffer>) => Promise<void>) => Promise<void>,
): Promise<void> {
  try {
    await feed(async (chunks) => {
      for await (const chunk of chunks) {
        for (let at = 0; at < chunk.length;) at += (await handle.write(chunk, at)).bytesWritten;
      }
    });
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * The filesystem blob store (BLOB_STORE=filesystem, BLOB_DIR). A put writes
 * `<key>.<random>.partial` next to the target through one file handle, fsyncs it and renames it
 * into place, so a crash never leaves half a blob under a key. Every process that reads or writes blobs (api, worker,
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

  const openPartial = createPartialOpener();

  return {
    description: `directory ${root}`,

    async put(key, body, limits = {}) {
      const target = pathOf(key);
      const partial = `${target}.${randomBytes(6).toString('hex')}.partial`;
      const meter = new MeteredStream(limits);
      try {
        await writeSynced(await openPartial(partial), (into) => pipeline(bodyStream(body), meter, into));
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
