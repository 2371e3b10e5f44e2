import { ContactImport } from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { mapHeader, type FileProblem } from './contact-import.fns.ts';
import { hasReplacement, problemOf, recordsOf, rowPosition } from './import-csv-reader.ts';
import {
  failImport,
  loadImport,
  segmentProblem,
  summaryOf,
  type ImportPassDeps,
  type ImportSummary,
  type ImportTarget,
} from './import-progress.ts';

/** Records read between two heartbeats of the validation pass. */
const HEARTBEAT_EVERY = 10_000;

/**
 * The first pass: reads the file whole and refuses it (status failed, nothing imported) when it
 * is not UTF-8, has no usable header, breaks CSV (an unclosed quote), has a row over the size
 * limit, more than `maxRows` rows, or more rows than the import's static segment can take.
 * Otherwise the import moves to importing with its header and row count.
 */
export async function validateImport(
  deps: ImportPassDeps,
  target: ImportTarget,
  heartbeat: (details: unknown) => void,
): Promise<ImportSummary> {
  const row = await loadImport(deps, target);
  if (row.status !== 'validating' || !row.blobKey) return summaryOf(row);
  const { maxRows } = deps;
  let header: string[] | null = null;
  let rows = 0;
  let problem: FileProblem | null = null;
  const { records, lines } = recordsOf(await deps.store().get(row.blobKey), 0);
  const position = rowPosition(lines, 0, 0);
  try {
    for await (const { record, info } of records) {
      const line = position(info);
      if (hasReplacement(record)) {
        problem = {
          reason: 'INVALID_ENCODING',
          message: `The file is not UTF-8 (line ${line}): save it as "CSV UTF-8" and upload it again.`,
          line,
        };
        break;
      }
      if (header === null) {
        header = record;
        const mapped = mapHeader(header);
        if (!mapped.ok) {
          problem = mapped.problem;
          break;
        }
        continue;
      }
      rows += 1;
      if (rows > maxRows) {
        problem = {
          reason: 'TOO_MANY_ROWS',
          message: `The file has more than ${maxRows} rows (line ${line}); split it into several imports.`,
          line,
        };
        break;
      }
      if (rows % HEARTBEAT_EVERY === 0) heartbeat({ validated: rows });
    }
  } catch (error) {
    problem = problemOf(error, lines);
    if (problem === null) throw error;
  }
  if (problem === null && header === null)
    problem = { reason: 'EMPTY_FILE', message: 'The file is empty: it needs a header line with an "email" column.', line: null };
  if (problem === null && row.segmentId) problem = await segmentProblem(deps, target.orgId, row.segmentId, rows);
  if (problem !== null) return failImport(deps, target, problem);

  const em = scopeToOrg(deps.orm.em.fork(), target.orgId);
  await em.nativeUpdate(
    ContactImport,
    { id: target.importId, status: 'validating' },
    { status: 'importing', columns: header, totalRows: rows, updatedAt: new Date() },
  );
  return summaryOf(await em.findOneOrFail(ContactImport, { id: target.importId }));
}
