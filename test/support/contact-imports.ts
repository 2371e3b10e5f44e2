import { randomBytes } from 'node:crypto';
import { ContactImport } from '../../db/entities/index.ts';
import { scopeToOrg, type MikroORM } from '../../db/orm.ts';
import type { BlobStore } from '../../src/blob/blob-store.ts';
import { createLogger } from '../../src/logger.ts';
import { createContactImportRunner } from '../../src/modules/contacts/contact-import.runner.ts';

/**
 * A CSV import as the upload flow leaves it (the file in the blob store, the import row
 * `validating`, into `segmentId` when given), then validated and run by the real runner, as the
 * import workflow's activities run it. Resolves with the import's id and both steps' results.
 */
export async function runContactImport(options: {
  orm: MikroORM;
  blobs: BlobStore;
  orgId: string;
  csv: string;
  filename?: string;
  segmentId?: string;
}) {
  const { orm, blobs, orgId } = options;
  const key = `contact-imports/${orgId}/${options.filename ?? `${randomBytes(6).toString('hex')}.csv`}`;
  await blobs.put(key, Buffer.from(options.csv));
  const em = scopeToOrg(orm.em.fork(), orgId);
  const row = em.create(ContactImport, {
    orgId,
    status: 'validating',
    blobKey: key,
    ...(options.filename !== undefined ? { filename: options.filename } : {}),
    ...(options.segmentId !== undefined ? { segmentId: options.segmentId } : {}),
    uploadExpiresAt: new Date(Date.now() + 60_000),
  });
  await em.flush();
  const runner = createContactImportRunner({ orm, blobs, logger: createLogger('silent') });
  const target = { orgId, importId: row.id };
  const validated = await runner.validate(target, () => {});
  const ran = await runner.run(target, () => {});
  return { importId: row.id, validated, ran };
}
