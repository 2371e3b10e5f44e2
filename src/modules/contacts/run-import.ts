import type { EntityManager } from '@mikro-orm/postgresql';
import { ContactImport } from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { TouchedAutomation } from '../automations/automation-runs.repo.ts';
import { enrolContactChanges, enrolSegmentMembers } from '../automations/automation-triggers.ts';
import { mapHeader, mergeImported, readRow, type HeaderMapping, type ImportedContact } from './contact-import.fns.ts';
import { writeImportBatch, type ImportBatchChanges, type ImportCheckpoint, type SkippedRow } from './contact-imports.repo.ts';
import { recordsOf, rowPosition } from './import-csv-reader.ts';
import { failImport, loadImport, summaryOf, type ImportPassDeps, type ImportSummary, type ImportTarget } from './import-progress.ts';

/** Rows (contacts and skipped ones) written per transaction. */
const BATCH_ROWS = 1_000;

/** The runs a batch's changes trigger, in its transaction. */
async function enrolImported(
  em: EntityManager,
  orgId: string,
  changes: ImportBatchChanges,
  segmentId: string | null,
): Promise<TouchedAutomation[]> {
  const touched = await enrolContactChanges(em, orgId, changes.contacts);
  if (segmentId) touched.push(...(await enrolSegmentMembers(em, orgId, segmentId, changes.joinedSegment)));
  return touched;
}

/**
 * The second pass: streams the validated file from its checkpoint; each batch of rows is merged
 * by email, upserted with its skipped rows and the checkpoint in one transaction, so a crash
 * resumes exactly after the last commit. Memory holds one batch, whatever the file's size. A
 * batch starts, in its transaction, the automation runs its contacts trigger.
 */
export async function runImport(deps: ImportPassDeps, target: ImportTarget, heartbeat: (details: unknown) => void): Promise<ImportSummary> {
  const row = await loadImport(deps, target);
  if (row.status !== 'importing' || !row.blobKey || !row.columns) return summaryOf(row);
  const mapped = mapHeader(row.columns);
  if (!mapped.ok) return failImport(deps, target, mapped.problem);
  const mapping: HeaderMapping = mapped.mapping;
  const fromStart = row.byteOffset === 0;

  let checkpoint: ImportCheckpoint = { rowsDone: row.rowsDone, byteOffset: row.byteOffset, linesDone: row.linesDone };
  let batch = new Map<string, ImportedContact>();
  let skipped: SkippedRow[] = [];
  let pending = 0;
  const flush = async () => {
    if (pending === 0) return;
    const contacts = [...batch.values()];
    const errors = skipped;
    const at = checkpoint;
    const touched = await deps.orm.em.fork().transactional(async (em) => {
      const changes = await writeImportBatch(em, { ...target, segmentId: row.segmentId ?? null }, contacts, errors, at);
      return enrolImported(em, target.orgId, changes, row.segmentId ?? null);
    });
    deps.wakeAutomations?.(touched);
    batch = new Map();
    skipped = [];
    pending = 0;
    heartbeat({ rowsDone: at.rowsDone });
  };

  let headerSkipped = !fromStart;
  const { records, lines } = recordsOf(await deps.store().get(row.blobKey, { start: row.byteOffset }), row.byteOffset);
  const position = rowPosition(lines, row.byteOffset, row.linesDone);
  for await (const { record, info } of records) {
    const line = position(info);
    const end = row.byteOffset + info.bytes;
    const next: ImportCheckpoint = {
      rowsDone: checkpoint.rowsDone,
      byteOffset: end,
      linesDone: lines.linesBefore(end) + row.linesDone,
    };
    if (!headerSkipped) {
      headerSkipped = true;
      checkpoint = next;
      continue;
    }
    next.rowsDone += 1;
    checkpoint = next;
    const outcome = readRow(record, mapping);
    if (outcome.ok) {
      const earlier = batch.get(outcome.contact.email);
      batch.set(outcome.contact.email, earlier ? mergeImported(earlier, outcome.contact) : outcome.contact);
    } else {
      skipped.push({ row: next.rowsDone, line, email: outcome.email, reason: outcome.reason, message: outcome.message });
    }
    pending += 1;
    if (pending >= BATCH_ROWS) await flush();
  }
  await flush();

  const em = scopeToOrg(deps.orm.em.fork(), target.orgId);
  await em.nativeUpdate(
    ContactImport,
    { id: target.importId, status: 'importing' },
    { status: 'completed', completedAt: new Date(), updatedAt: new Date() },
  );
  const done = await em.findOneOrFail(ContactImport, { id: target.importId });
  await deps.store().delete(row.blobKey);
  deps.logger.info('contact import completed', { importId: target.importId, ...summaryOf(done) });
  return summaryOf(done);
}
