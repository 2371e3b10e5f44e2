import { Readable } from 'node:stream';
import { stringify } from 'csv-stringify';

/**
 * CSV (RFC 4180, UTF-8, a header line) of `records`, as a stream of bytes: records are pulled
 * as the client reads, so a very large file holds about one page in memory, and a client that
 * disconnects stops the reads.
 */
export function csvStream(columns: readonly string[], records: AsyncIterable<unknown[]>): Readable {
  const csv = stringify({ header: true, columns: [...columns], bom: false });
  const source = Readable.from(records);
  source.on('error', (error) => csv.destroy(error));
  csv.on('close', () => source.destroy());
  return source.pipe(csv);
}
