import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createS3BlobStore } from '../../src/blob/s3-blob-store.ts';
import { createBlobStore, openBlobStore } from '../../src/blob/open-blob-store.ts';
import { freePort } from '../../src/dev/ports.ts';
import { createLogger } from '../../src/logger.ts';
import { blobStoreContract } from '../support/blob-store-contract.ts';
import { createTestBucket, testS3Server, type TestBucket } from '../support/s3.ts';

blobStoreContract('S3 blob store (SeaweedFS)', async () => {
  const bucket = await createTestBucket();
  const store = createS3BlobStore(bucket.settings);
  return {
    store,
    leftovers: () => bucket.leftovers(),
    async close() {
      store.close();
      await bucket.drop();
    },
  };
});

describe('S3 blob store at start', () => {
  let bucket: TestBucket;
  beforeAll(async () => {
    bucket = await createTestBucket('');
  });
  afterAll(() => bucket.drop());
  const logger = createLogger('silent');

  it('opens a bucket that answers, with the keys under S3_KEY_PREFIX', async () => {
    const prefixed = await createTestBucket('prod/herald/');
    const store = await openBlobStore({ blobStore: { kind: 's3', s3: prefixed.settings } }, logger, 'test');
    await store!.put('uploads/a', Buffer.from('x'));
    expect(await prefixed.leftovers()).toEqual(['uploads/a']);
    expect(store!.description).toBe(`s3://${prefixed.bucket}/prod/herald/ at ${testS3Server().endpoint}`);
    store!.close();
    await prefixed.drop();
  });

  it('refuses a missing bucket, naming it', async () => {
    const store = (await createBlobStore({ blobStore: { kind: 's3', s3: { ...bucket.settings, bucket: 'herald-no-such-bucket' } } }))!;
    await expect(store.check()).rejects.toMatchObject({
      name: 'BlobStoreUnavailableError',
      message: expect.stringMatching(/bucket "herald-no-such-bucket" does not exist/),
    });
    store.close();
  });

  it('refuses wrong credentials (the server checks signatures)', async () => {
    const credentials = { accessKeyId: bucket.settings.credentials!.accessKeyId, secretAccessKey: 'not-the-secret' };
    const store = createS3BlobStore({ ...bucket.settings, credentials });
    await expect(store.check()).rejects.toMatchObject({ message: expect.stringMatching(/access to the bucket .* was refused/) });
    await expect(store.put('x', Buffer.from('x'))).rejects.toThrow();
    store.close();
  });

  it('refuses an endpoint nobody listens on, saying it cannot be reached', async () => {
    const store = createS3BlobStore({ ...bucket.settings, endpoint: `http://127.0.0.1:${await freePort()}` });
    await expect(store.check()).rejects.toMatchObject({ message: expect.stringMatching(/cannot be reached/) });
    store.close();
  });
});
