/**
 * Contact export as CSV (GET /contacts/export): the workspace's contacts, or a segment's, in
 * creation order, read in keyset pages of EXPORT_PAGE rows and written through csv-stringify as
 * the client reads (backpressure: a slow client holds one page in memory, and a client that
 * goes away stops the reads). The columns are the ones an import takes back: tags and
 * custom_fields as JSON (tags may hold any character, so a separator could not round-trip).
 * Cells that a spreadsheet would read as a formula are escaped unless the caller asks for raw
 * values (csv.ts).
 */
import type { Readable } from 'node:stream';
import { csvStream, type CsvOptions } from './csv.ts';
import type { EntityManager } from '@mikro-orm/postgresql';
import { findExportPage, type ContactFilters, type ExportRow } from './contacts.repo.ts';

export const EXPORT_COLUMNS = [
  'id',
  'email',
  'first_name',
  'last_name',
  'company',
  'tags',
  'status',
  'custom_fields',
  'created_at',
  'updated_at',
] as const;
const EXPORT_PAGE = 1_000;

export type ExportFilter = Pick<ContactFilters, 'status' | 'segment'>;

/** The contacts of `filter`, page by page, oldest first. */
async function* contactPages(em: EntityManager, orgId: string, filter: ExportFilter): AsyncGenerator<ExportRow[]> {
  let after: { at: string; id: string } | null = null;
  for (;;) {
    const rows = await findExportPage(em, orgId, filter, after, EXPORT_PAGE);
    if (rows.length === 0) return;
    yield rows;
    if (rows.length < EXPORT_PAGE) return;
    const last = rows[rows.length - 1]!;
    after = { at: last.position, id: last.id };
  }
}

/** One contact as CSV cells, in EXPORT_COLUMNS order. */
function cellsOf(row: ExportRow): string[] {
  return [
    row.id,
    row.email,
    row.first_name,
    row.last_name,
    row.company,
    row.tags.length > 0 ? JSON.stringify(row.tags) : '',
    row.status,
    Object.keys(row.custom_fields).length > 0 ? JSON.stringify(row.custom_fields) : '',
    row.created_at,
    row.updated_at,
  ];
}

/** The CSV of the contacts of `filter` (header line first), as a stream of UTF-8 bytes. */
export function exportContactsCsv(em: EntityManager, orgId: string, filter: ExportFilter, options: CsvOptions): Readable {
  async function* records() {
    for await (const page of contactPages(em, orgId, filter)) {
      for (const row of page) yield cellsOf(row);
    }
  }
  return csvStream(EXPORT_COLUMNS, records(), options);
}
