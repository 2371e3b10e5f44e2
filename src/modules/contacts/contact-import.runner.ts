import type { MikroORM } from '@mikro-orm/postgresql';
import type { BlobStore } from '../../blob/blob-store.ts';
import type { Logger } from '../../logger.ts';
import type { AutomationWaker } from '../automations/automation-wake.ts';
import { IMPORT_LIMITS } from './contact-import.fns.ts';
import { failImport, type ImportPassDeps, type ImportSummary, type ImportTarget } from './import-progress.ts';
import { runImport } from './run-import.ts';
import { validateImport } from './validate-import.ts';

export type { ImportSummary, ImportTarget } from './import-progress.ts';

/**
 * The import workflow's two passes over an uploaded file. `validate` reads it whole and refuses
 * it (status failed, nothing imported) when it is not UTF-8, has no usable header, breaks CSV
 * (an unclosed quote), has a row over the size limit or more than IMPORT_LIMITS.maxRows rows.
 * `run` then streams it from its checkpoint: each batch of rows is merged by email, upserted
 * with its skipped rows and the checkpoint in one transaction, so a crash resumes exactly after
 * the last commit. Memory holds one batch, whatever the file's size. A batch starts, in its
 * transaction, the automation runs its contacts trigger (created, tags added, segments joined:
 * one enrolment per trigger key for the whole batch). The passes are validate-import.ts and
 * run-import.ts (the file's reading: import-csv-reader.ts); this factory wires them.
 */
export function createContactImportRunner(deps: {
  orm: MikroORM;
  blobs: BlobStore | null;
  logger: Logger;
  /** Data rows a file may have (IMPORT_LIMITS.maxRows; smaller in tests). */
  maxRows?: number;
  /** Wakes automations a batch gave runs; without it the automation reconciler finds them. */
  wakeAutomations?: AutomationWaker | undefined;
}) {
  const passDeps: ImportPassDeps = {
    orm: deps.orm,
    logger: deps.logger,
    maxRows: deps.maxRows ?? IMPORT_LIMITS.maxRows,
    wakeAutomations: deps.wakeAutomations,
    store(): BlobStore {
      if (!deps.blobs) throw new Error('BLOB_DIR is not configured: the import file cannot be read');
      return deps.blobs;
    },
  };

  return {
    validate: (target: ImportTarget, heartbeat: (details: unknown) => void): Promise<ImportSummary> =>
      validateImport(passDeps, target, heartbeat),

    run: (target: ImportTarget, heartbeat: (details: unknown) => void): Promise<ImportSummary> => runImport(passDeps, target, heartbeat),

    /** The workflow's last word when the passes kept failing: the import ends failed, with what it did so far. */
    async giveUp(target: ImportTarget, message: string): Promise<ImportSummary> {
      return failImport(passDeps, target, { reason: 'IMPORT_FAILED', message: `The import stopped: ${message}`.slice(0, 500), line: null });
    },
  };
}

export type ContactImportRunner = ReturnType<typeof createContactImportRunner>;
