import type { Readable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ContactImportError } from '../../../db/entities/index.ts';
import { csvStream, type CsvOptions } from './csv.ts';

/** Error rows read per query while the report is streamed. */
const REPORT_PAGE = 1_000;
export const IMPORT_REPORT_COLUMNS = ['row', 'line', 'email', 'reason', 'message'] as const;

/**
 * The skipped rows of an import as CSV (row, line, email, reason, message), in row order,
 * streamed from the database a page at a time; cells that could start a spreadsheet
 * formula escaped unless `csv` says otherwise. `em`: a fork scoped to the import's workspace.
 */
export function importErrorReport(em: EntityManager, importId: string, csv: CsvOptions): Readable {
  async function* records() {
    for (let after = 0; ;) {
      const rows = await em.find(ContactImportError, { importId, row: { $gt: after } }, { orderBy: { row: 'asc' }, limit: REPORT_PAGE });
      for (const row of rows) yield [row.row, row.line, row.email, row.reason, row.message];
      if (rows.length < REPORT_PAGE) return;
      after = rows.at(-1)!.row;
      em.clear();
    }
  }
  return csvStream(IMPORT_REPORT_COLUMNS, records(), csv);
}
