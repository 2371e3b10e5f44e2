import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFsBlobStore } from '../../src/blob/fs-blob-store.ts';
import { createBlobStore } from '../../src/blob/open-blob-store.ts';
import { blobStoreContract } from '../support/blob-store-contract.ts';

/** Every file under a directory, relative paths, sorted: partial files included, so a failed put that left one shows. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort();
}

blobStoreContract('filesystem blob store', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'herald-blobs-'));
  return {
    store: createFsBlobStore(dir),
    leftovers: () => filesUnder(dir),
    close: () => rm(dir, { recursive: true, force: true }),
  };
});

describe('createBlobStore', () => {
  it('is absent when the filesystem store has no BLOB_DIR', async () => {
    expect(await createBlobStore({ blobStore: { kind: 'filesystem', dir: '' } })).toBeNull();
    expect((await createBlobStore({ blobStore: { kind: 'filesystem', dir: tmpdir() } }))?.description).toBe(`directory ${tmpdir()}`);
  });

  it('refuses a blob directory that cannot be made at its check, naming it', async () => {
    // Under a file: no directory can be made there, whoever runs the test (root included).
    const dir = await mkdtemp(join(tmpdir(), 'herald-blobs-'));
    await writeFile(join(dir, 'file'), 'x');
    const store = createFsBlobStore(join(dir, 'file', 'blobs'));
    await expect(store.check()).rejects.toMatchObject({
      name: 'BlobStoreUnavailableError',
      message: expect.stringContaining(join(dir, 'file', 'blobs')),
    });
    await rm(dir, { recursive: true, force: true });
  });
});
