import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { assertBlobKey, BlobNotFoundError, BlobSizeError, readBlob, type BlobStore } from '../../src/blob/blob-store.ts';

/** A stream of `bytes` in chunks of `chunk`, so limits are crossed mid-stream. */
function chunked(bytes: Buffer, chunk = 1024): Readable {
  return Readable.from(
    (function* () {
      for (let offset = 0; offset < bytes.length; offset += chunk) yield bytes.subarray(offset, offset + chunk);
    })(),
  );
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export interface ContractSubject {
  store: BlobStore;
  /** Every key the store holds, sorted, with anything a failed put could leave (partial files, unfinished uploads). */
  leftovers(): Promise<string[]>;
  close(): Promise<void>;
}

/** The BlobStore contract, run against each implementation (a fresh, empty store per test). */
export function blobStoreContract(name: string, open: () => Promise<ContractSubject>): void {
  describe(name, () => {
    let subject: ContractSubject;
    let store: BlobStore;
    const filesUnder = () => subject.leftovers();

    beforeEach(async () => {
      subject = await open();
      store = subject.store;
    });
    afterEach(() => subject.close());

    it('stores a stream and a buffer atomically and reads them back byte for byte', async () => {
      const bytes = randomBytes(200_000);
      const stored = await store.put('uploads/org/a', chunked(bytes));
      expect(stored).toEqual({ key: 'uploads/org/a', sizeBytes: bytes.length, sha256: sha256(bytes) });
      expect((await readBlob(store, 'uploads/org/a')).equals(bytes)).toBe(true);

      await store.put('uploads/org/b', Buffer.from('hello'));
      expect((await readBlob(store, 'uploads/org/b')).toString()).toBe('hello');
      expect(await store.size('uploads/org/a')).toBe(bytes.length);
      expect(await store.exists('uploads/org/b')).toBe(true);
      expect(await filesUnder()).toEqual(['uploads/org/a', 'uploads/org/b']);
    });

    it('replaces a blob whole: a reader sees the old or the new bytes, never a mix', async () => {
      await store.put('k', Buffer.from('old bytes'));
      const reading = await store.get('k');
      await store.put('k', Buffer.from('new'));
      const chunks: Buffer[] = [];
      for await (const chunk of reading) chunks.push(chunk as Buffer);
      expect(Buffer.concat(chunks).toString()).toBe('old bytes');
      expect((await readBlob(store, 'k')).toString()).toBe('new');
    });

    it('accepts exactly exactBytes and stores nothing when the body is one byte longer or shorter', async () => {
      const bytes = randomBytes(10_000);
      await expect(
        store.put('exact/long', chunked(Buffer.concat([bytes, Buffer.from('x')])), { exactBytes: bytes.length }),
      ).rejects.toMatchObject({
        name: 'BlobSizeError',
        reason: 'too_large',
      });
      const short = store.put('exact/short', chunked(bytes.subarray(1)), { exactBytes: bytes.length });
      await expect(short).rejects.toBeInstanceOf(BlobSizeError);
      await expect(short).rejects.toMatchObject({ reason: 'too_short', receivedBytes: bytes.length - 1 });
      expect(await store.exists('exact/long')).toBe(false);
      expect(await store.exists('exact/short')).toBe(false);
      expect(await filesUnder()).toEqual([]);

      const stored = await store.put('exact/ok', chunked(bytes), { exactBytes: bytes.length });
      expect(stored.sizeBytes).toBe(bytes.length);
      expect(await filesUnder()).toEqual(['exact/ok']);
    });

    it('stores up to maxBytes and nothing past it', async () => {
      await store.put('max/at', Buffer.alloc(4096, 1), { maxBytes: 4096 });
      await expect(store.put('max/over', chunked(Buffer.alloc(4097, 1)), { maxBytes: 4096 })).rejects.toMatchObject({
        reason: 'too_large',
      });
      await store.put('max/under', Buffer.alloc(10, 1), { maxBytes: 4096 });
      expect(await filesUnder()).toEqual(['max/at', 'max/under']);
    });

    it('leaves nothing when the source stream fails midway', async () => {
      const failing = new Readable({
        read() {
          this.push(Buffer.alloc(512));
          this.destroy(new Error('connection reset'));
        },
      });
      await expect(store.put('broken', failing)).rejects.toThrow('connection reset');
      expect(await filesUnder()).toEqual([]);
    });

    it('answers a missing key: get rejects with BlobNotFoundError, size null, exists false, delete is fine', async () => {
      const missing = store.get('nothing/here');
      await expect(missing).rejects.toBeInstanceOf(BlobNotFoundError);
      await expect(missing).rejects.toMatchObject({ key: 'nothing/here' });
      expect(await store.size('nothing/here')).toBeNull();
      expect(await store.exists('nothing/here')).toBe(false);
      await expect(store.delete('nothing/here')).resolves.toBeUndefined();
    });

    it('deletes a blob', async () => {
      await store.put('gone', Buffer.from('bye'));
      await store.delete('gone');
      expect(await store.exists('gone')).toBe(false);
      await expect(store.get('gone')).rejects.toBeInstanceOf(BlobNotFoundError);
    });

    it('refuses keys that could leave the store or are not Herald-chosen paths', async () => {
      for (const key of ['..', '../x', 'a/../../etc/passwd', 'a/./b', '/abs', 'a//b', 'a/', '', 'sp ace', 'a\\b', 'nul\u0000']) {
        expect(() => assertBlobKey(key), JSON.stringify(key)).toThrow(/invalid blob key/);
        await expect(store.put(key, Buffer.from('x')), JSON.stringify(key)).rejects.toThrow(/invalid blob key/);
        await expect(store.get(key)).rejects.toThrow(/invalid blob key/);
        await expect(store.delete(key)).rejects.toThrow(/invalid blob key/);
      }
      for (const key of ['a', 'uploads/0123/x.y-z_1', '..a', 'a..b']) expect(() => assertBlobKey(key)).not.toThrow();
      expect(await filesUnder()).toEqual([]);
    });

    it('reads from a byte offset, and nothing from the end or past it', async () => {
      const bytes = randomBytes(70_000);
      await store.put('ranged', bytes);
      expect((await readAll(await store.get('ranged', { start: 0 }))).equals(bytes)).toBe(true);
      expect((await readAll(await store.get('ranged', { start: 12_345 }))).equals(bytes.subarray(12_345))).toBe(true);
      expect((await readAll(await store.get('ranged', { start: bytes.length }))).length).toBe(0);
      expect((await readAll(await store.get('ranged', { start: bytes.length + 10 }))).length).toBe(0);
      await expect(store.get('absent', { start: 10 })).rejects.toBeInstanceOf(BlobNotFoundError);
    });

    it('streams a body of several multipart parts and leaves nothing when it ends one byte short', async () => {
      const bytes = randomBytes(11 * 1024 * 1024 + 17);
      const stored = await store.put('large/ok', chunked(bytes, 64 * 1024), { exactBytes: bytes.length });
      expect(stored).toEqual({ key: 'large/ok', sizeBytes: bytes.length, sha256: sha256(bytes) });
      expect(await store.size('large/ok')).toBe(bytes.length);
      expect(sha256(await readBlob(store, 'large/ok'))).toBe(sha256(bytes));

      const short = store.put('large/short', chunked(bytes.subarray(1), 64 * 1024), { exactBytes: bytes.length });
      await expect(short).rejects.toMatchObject({ name: 'BlobSizeError', reason: 'too_short' });
      const long = store.put('large/long', chunked(bytes, 64 * 1024), { maxBytes: 6 * 1024 * 1024 });
      await expect(long).rejects.toMatchObject({ name: 'BlobSizeError', reason: 'too_large' });
      expect(await filesUnder()).toEqual(['large/ok']);
    });

    it('checks itself and stays usable afterwards', async () => {
      await expect(store.check()).resolves.toBeUndefined();
      await store.put('after-check', Buffer.from('ok'));
      expect(await store.exists('after-check')).toBe(true);
    });
  });
}
