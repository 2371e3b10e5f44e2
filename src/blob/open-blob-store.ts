import type { Logger } from '../logger.ts';
import type { BlobStoreSettings } from './blob-config.ts';
import type { BlobStore } from './blob-store.ts';
import { createFsBlobStore } from './fs-blob-store.ts';

/**
 * The configured blob store (BLOB_STORE: BLOB_DIR or the S3_* bucket), or null when the
 * filesystem store's BLOB_DIR is empty (attachments and uploads answer 503, inbound mail 451).
 * The S3 store's module (the AWS SDK: ~5 MB of live heap in every process that loads it) is
 * imported only when the bucket is the configured store.
 */
export async function createBlobStore(config: { blobStore: BlobStoreSettings }): Promise<BlobStore | null> {
  const settings = config.blobStore;
  if (settings.kind === 's3') return (await import('./s3-blob-store.ts')).createS3BlobStore(settings.s3);
  return settings.dir === '' ? null : createFsBlobStore(settings.dir);
}

/**
 * The blob store a process starts with: built once and checked before the process serves
 * anything, so a missing bucket, refused credentials or an unwritable directory stop it at
 * start with a sentence saying which (BlobStoreUnavailableError), never at the first message.
 */
export async function openBlobStore(config: { blobStore: BlobStoreSettings }, logger: Logger, process: string): Promise<BlobStore | null> {
  const store = await createBlobStore(config);
  if (!store) {
    logger.warn(`${process}: no blob store (BLOB_DIR is empty): attachments answer 503 and inbound mail 451`);
    return null;
  }
  try {
    await store.check();
  } catch (error) {
    store.close();
    throw error;
  }
  logger.info('blob store', { process, store: store.description });
  return store;
}
