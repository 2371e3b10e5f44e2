import { Readable } from 'node:stream';
import { stringify } from 'csv-stringify';

/** What a spreadsheet may read as the start of a formula (OWASP, CSV injection): = + - @, tab, carriage return. */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * A cell a spreadsheet shows as text: one that could start a formula gets a leading single
 * quote (OWASP's CSV injection advice), any other is returned as it is.
 */
export function escapeFormulaCell(cell: string): string {
  return FORMULA_START.test(cell) ? `'${cell}` : cell;
}

export interface CsvOptions {
  /** Escape text cells that could start a formula (escapeFormulaCell); false writes values exactly as stored. */
  escapeFormulas: boolean;
}

/**
 * CSV (RFC 4180, UTF-8, a header line) of `records`, as a stream of bytes: records are pulled
 * as the client reads, so a very large file holds about one page in memory, and a client that
 * disconnects stops the reads. Text cells are formula-escaped unless `escapeFormulas` is false.
 */
export function csvStream(columns: readonly string[], records: AsyncIterable<unknown[]>, options: CsvOptions): Readable {
  const csv = stringify({
    header: true,
    columns: [...columns],
    bom: false,
    ...(options.escapeFormulas ? { cast: { string: escapeFormulaCell } } : {}),
  });
  const source = Readable.from(records);
  source.on('error', (error) => csv.destroy(error));
  csv.on('close', () => source.destroy());
  return source.pipe(csv);
}
