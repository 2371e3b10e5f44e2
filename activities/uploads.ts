import type { MikroORM } from '@mikro-orm/postgresql';
import type { BlobStore } from '../src/blob/blob-store.ts';
import type { Config } from '../src/config.ts';
import { createAttachmentsServiceFromConfig } from '../src/modules/attachments/attachments.service.ts';

export interface UploadActivityDeps {
  orm: MikroORM;
  config: Pick<Config, 'encryptionKeys' | 'http'>;
  blobs: BlobStore | null;
}

/**
 * Attachment upload maintenance. deleteStaleUploads is idempotent: a retry after a crash finds
 * only what is still stale (a blob already deleted is fine to delete again).
 */
export function createUploadActivities({ orm, config, blobs }: UploadActivityDeps) {
  const attachments = createAttachmentsServiceFromConfig(orm, config, blobs);
  return {
    /**
     * Deletes one batch of uploads unused for `retentionMs` (default 7 days) and read by no open
     * email, blob then row; returns how many (fewer than `batchSize` means none are left).
     */
    async deleteStaleUploads(input: { retentionMs?: number; batchSize: number }): Promise<{ deleted: number }> {
      return attachments.deleteStaleUploads(input);
    },
  };
}
