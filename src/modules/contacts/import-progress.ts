import type { MikroORM } from '@mikro-orm/postgresql';
import { ContactImport, type ContactImportFailure } from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { BlobStore } from '../../blob/blob-store.ts';
import type { Logger } from '../../logger.ts';
import type { AutomationWaker } from '../automations/automation-wake.ts';
import { MEMBERSHIP_LIMITS } from '../segments/segments.fns.ts';
import type { FileProblem } from './contact-import.fns.ts';
import { findSegmentSize } from './contact-imports.repo.ts';

export interface ImportTarget {
  orgId: string;
  importId: string;
}

/** What the import's activities report back to its workflow. */
export interface ImportSummary {
  status: ContactImport['status'];
  rowsDone: number;
  created: number;
  updated: number;
  unchanged: number;
  skipped: number;
}

/** What the import's passes need, built once by createContactImportRunner. */
export interface ImportPassDeps {
  orm: MikroORM;
  logger: Logger;
  /** The blob store; throws when none is configured. */
  store: () => BlobStore;
  /** Data rows a file may have. */
  maxRows: number;
  wakeAutomations?: AutomationWaker | undefined;
}

/** The import row, read afresh. */
export async function loadImport(deps: ImportPassDeps, target: ImportTarget): Promise<ContactImport> {
  return scopeToOrg(deps.orm.em.fork(), target.orgId).findOneOrFail(ContactImport, { id: target.importId });
}

export function summaryOf(row: ContactImport): ImportSummary {
  return {
    status: row.status,
    rowsDone: row.rowsDone,
    created: row.created,
    updated: row.updated,
    unchanged: row.unchanged,
    skipped: row.skipped,
  };
}

/** Why the import's segment cannot take `rows` more contacts (gone, no longer static, or over the member cap), or null. */
export async function segmentProblem(deps: ImportPassDeps, orgId: string, segmentId: string, rows: number): Promise<FileProblem | null> {
  const segment = await findSegmentSize(deps.orm.em.fork(), orgId, segmentId);
  if (!segment || segment.type !== 'static') {
    return {
      reason: 'SEGMENT_NOT_STATIC',
      message: `Segment ${segmentId} is gone or no longer a static segment: nothing was imported.`,
      line: null,
    };
  }
  if (segment.members + rows > MEMBERSHIP_LIMITS.membersMax) {
    return {
      reason: 'SEGMENT_FULL',
      message: `Segment ${segmentId} holds ${segment.members} contacts; with the file's ${rows} rows it could pass its cap of ${MEMBERSHIP_LIMITS.membersMax}.`,
      line: null,
    };
  }
  return null;
}

/** Ends the import as failed (nothing more is imported) and drops its file. */
export async function failImport(deps: ImportPassDeps, target: ImportTarget, failure: ContactImportFailure): Promise<ImportSummary> {
  const em = scopeToOrg(deps.orm.em.fork(), target.orgId);
  await em.nativeUpdate(
    ContactImport,
    { id: target.importId, status: { $in: ['validating', 'importing'] } },
    { status: 'failed', failure, completedAt: new Date(), updatedAt: new Date() },
  );
  const row = await em.findOneOrFail(ContactImport, { id: target.importId });
  if (row.blobKey) await deps.store().delete(row.blobKey);
  deps.logger.info('contact import failed', { importId: target.importId, reason: failure.reason });
  return summaryOf(row);
}
