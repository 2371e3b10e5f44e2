/** Reading an import's CSV file: records with exact line numbers, and the parser's errors as file problems. */
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { CsvError, parse, type Info } from 'csv-parse';
import { IMPORT_LIMITS, type FileProblem } from './contact-import.fns.ts';

/** A csv-parse record with its position (`info: true`). */
export interface ParsedRecord {
  record: string[];
  info: Info;
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * Counts the file's line breaks (LF, CRLF or a lone CR) on the bytes' way to the parser, so a
 * row's line number is exact: csv-parse counts a CRLF inside a quoted field as two lines. It
 * keeps the offsets of the breaks the parser has not reached yet (about a chunk's worth).
 */
export class LineCounter extends Transform {
  private offset: number;
  private readonly breaks: number[] = [];
  private head = 0;
  private previousWasCr = false;
  /** Breaks before the last offset asked about. */
  private counted = 0;

  constructor(startOffset: number) {
    super();
    this.offset = startOffset;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    for (let index = 0; index < chunk.length; index += 1) {
      const byte = chunk[index];
      if (byte === LF) {
        if (!this.previousWasCr) this.breaks.push(this.offset + index);
        this.previousWasCr = false;
      } else if (byte === CR) {
        this.breaks.push(this.offset + index);
        this.previousWasCr = true;
      } else {
        this.previousWasCr = false;
      }
    }
    this.offset += chunk.length;
    callback(null, chunk);
  }

  /** Line breaks before byte `end` (ask with offsets that never decrease). */
  linesBefore(end: number): number {
    while (this.head < this.breaks.length && this.breaks[this.head]! < end) {
      this.head += 1;
      this.counted += 1;
    }
    if (this.head > 4096) {
      this.breaks.splice(0, this.head);
      this.head = 0;
    }
    return this.counted;
  }
}

/**
 * The parser every pass uses: UTF-8 (a UTF-8 or UTF-16 byte order mark is honoured), empty
 * lines skipped, rows of any length (the row reader reports a wrong count), and no record past
 * IMPORT_LIMITS.maxRecordChars (a 10 MB line is refused, never buffered whole). Offsets are the
 * file's (`startOffset` onwards), and `lines` counts the breaks before an offset.
 */
export function recordsOf(source: Readable, startOffset: number): { records: AsyncIterable<ParsedRecord>; lines: LineCounter } {
  const lines = new LineCounter(startOffset);
  const parser = parse({
    bom: startOffset === 0,
    skip_empty_lines: true,
    relax_column_count: true,
    // csv-parse refuses a record only once it holds more than max_record_size + 1 characters.
    max_record_size: IMPORT_LIMITS.maxRecordChars - 1,
    info: true,
  });
  source.on('error', (error) => parser.destroy(error));
  lines.on('error', (error) => parser.destroy(error));
  parser.on('close', () => source.destroy());
  return { records: source.pipe(lines).pipe(parser), lines };
}

/** A csv-parse error as the whole-file problem it means. */
export function problemOf(error: unknown, lines: LineCounter): FileProblem | null {
  if (!(error instanceof CsvError)) return null;
  const at = (error as { bytes?: unknown }).bytes;
  const line = typeof at === 'number' ? lines.linesBefore(at) + 1 : null;
  if (error.code === 'CSV_MAX_RECORD_SIZE') {
    return {
      reason: 'RECORD_TOO_LARGE',
      message: `A row is longer than ${IMPORT_LIMITS.maxRecordChars} characters (line ${line ?? '?'}).`,
      line,
    };
  }
  return { reason: 'MALFORMED_CSV', message: `The file is not valid CSV at line ${line ?? '?'}: ${error.message}`, line };
}

/**
 * The line each record starts on, given the records in order: the breaks before the previous
 * record's end, plus the empty lines csv-parse skipped since, plus one. `startOffset` and
 * `linesBefore` place a pass that resumes mid-file.
 */
export function rowPosition(lines: LineCounter, startOffset: number, linesBefore: number): (info: Info) => number {
  let previousEnd = startOffset;
  let emptySeen = 0;
  return (info) => {
    const line = linesBefore + lines.linesBefore(previousEnd) + (info.empty_lines - emptySeen) + 1;
    emptySeen = info.empty_lines;
    previousEnd = startOffset + info.bytes;
    return line;
  };
}

/** Whether a field holds U+FFFD, which the UTF-8 decoding puts where the bytes were not UTF-8. */
export function hasReplacement(record: readonly string[]): boolean {
  return record.some((field) => field.includes('\uFFFD'));
}
