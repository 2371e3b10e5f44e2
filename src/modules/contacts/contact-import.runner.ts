import { Transform, type Readable, type TransformCallback } from 'node:stream';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { CsvError, parse, type Info } from 'csv-parse';
import { ContactImport, type ContactImportFailure } from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { BlobStore } from '../../blob/blob-store.ts';
import type { Logger } from '../../logger.ts';
import {
  IMPORT_LIMITS,
  mapHeader,
  mergeImported,
  readRow,
  type FileProblem,
  type HeaderMapping,
  type ImportedContact,
} from './contact-import.fns.ts';
import { MEMBERSHIP_LIMITS } from '../segments/segments.fns.ts';
import {
  findSegmentSize,
  writeImportBatch,
  type ImportBatchChanges,
  type ImportCheckpoint,
  type SkippedRow,
} from './contact-imports.repo.ts';
import { enrolContactChanges, enrolSegmentMembers } from '../automations/automation-triggers.ts';
import type { TouchedAutomation } from '../automations/automation-runs.repo.ts';
import type { AutomationWaker } from '../automations/automation-wake.ts';

/** Rows (contacts and skipped ones) written per transaction. */
const BATCH_ROWS = 1_000;
/** Records read between two heartbeats of the validation pass. */
const HEARTBEAT_EVERY = 10_000;

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

/** A csv-parse record with its position (`info: true`). */
interface ParsedRecord {
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
class LineCounter extends Transform {
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
function recordsOf(source: Readable, startOffset: number): { records: AsyncIterable<ParsedRecord>; lines: LineCounter } {
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
function problemOf(error: unknown, lines: LineCounter): FileProblem | null {
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
function rowPosition(lines: LineCounter, startOffset: number, linesBefore: number): (info: Info) => number {
  let previousEnd = startOffset;
  let emptySeen = 0;
  return (info) => {
    const line = linesBefore + lines.linesBefore(previousEnd) + (info.empty_lines - emptySeen) + 1;
    emptySeen = info.empty_lines;
    previousEnd = startOffset + info.bytes;
    return line;
  };
}

function hasReplacement(record: readonly string[]): boolean {
  return record.some((field) => field.includes('\uFFFD'));
}

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
 * The import workflow's two passes over an uploaded file. `validate` reads it whole and refuses
 * it (status failed, nothing imported) when it is not UTF-8, has no usable header, breaks CSV
 * (an unclosed quote), has a row over the size limit or more than IMPORT_LIMITS.maxRows rows.
 * `run` then streams it from its checkpoint: each batch of rows is merged by email, upserted
 * with its skipped rows and the checkpoint in one transaction, so a crash resumes exactly after
 * the last commit. Memory holds one batch, whatever the file's size. A batch starts, in its
 * transaction, the automation runs its contacts trigger (created, tags added, segments joined:
 * one enrolment per trigger key for the whole batch).
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
  const { orm, logger } = deps;
  const maxRows = deps.maxRows ?? IMPORT_LIMITS.maxRows;

  async function load(target: ImportTarget): Promise<ContactImport> {
    return scopeToOrg(orm.em.fork(), target.orgId).findOneOrFail(ContactImport, { id: target.importId });
  }

  function summaryOf(row: ContactImport): ImportSummary {
    return {
      status: row.status,
      rowsDone: row.rowsDone,
      created: row.created,
      updated: row.updated,
      unchanged: row.unchanged,
      skipped: row.skipped,
    };
  }

  function store(): BlobStore {
    if (!deps.blobs) throw new Error('BLOB_DIR is not configured: the import file cannot be read');
    return deps.blobs;
  }

  /** Why the import's segment cannot take `rows` more contacts (gone, no longer static, or over the member cap), or null. */
  async function segmentProblem(orgId: string, segmentId: string, rows: number): Promise<FileProblem | null> {
    const segment = await findSegmentSize(orm.em.fork(), orgId, segmentId);
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
  async function fail(target: ImportTarget, failure: ContactImportFailure): Promise<ImportSummary> {
    const em = scopeToOrg(orm.em.fork(), target.orgId);
    await em.nativeUpdate(
      ContactImport,
      { id: target.importId, status: { $in: ['validating', 'importing'] } },
      { status: 'failed', failure, completedAt: new Date(), updatedAt: new Date() },
    );
    const row = await em.findOneOrFail(ContactImport, { id: target.importId });
    if (row.blobKey) await store().delete(row.blobKey);
    logger.info('contact import failed', { importId: target.importId, reason: failure.reason });
    return summaryOf(row);
  }

  return {
    async validate(target: ImportTarget, heartbeat: (details: unknown) => void): Promise<ImportSummary> {
      const row = await load(target);
      if (row.status !== 'validating' || !row.blobKey) return summaryOf(row);
      let header: string[] | null = null;
      let rows = 0;
      let problem: FileProblem | null = null;
      const { records, lines } = recordsOf(await store().get(row.blobKey), 0);
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
      if (problem === null && row.segmentId) problem = await segmentProblem(target.orgId, row.segmentId, rows);
      if (problem !== null) return fail(target, problem);

      const em = scopeToOrg(orm.em.fork(), target.orgId);
      await em.nativeUpdate(
        ContactImport,
        { id: target.importId, status: 'validating' },
        { status: 'importing', columns: header, totalRows: rows, updatedAt: new Date() },
      );
      return summaryOf(await em.findOneOrFail(ContactImport, { id: target.importId }));
    },

    async run(target: ImportTarget, heartbeat: (details: unknown) => void): Promise<ImportSummary> {
      const row = await load(target);
      if (row.status !== 'importing' || !row.blobKey || !row.columns) return summaryOf(row);
      const mapped = mapHeader(row.columns);
      if (!mapped.ok) return fail(target, mapped.problem);
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
        const touched = await orm.em.fork().transactional(async (em) => {
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
      const { records, lines } = recordsOf(await store().get(row.blobKey, { start: row.byteOffset }), row.byteOffset);
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

      const em = scopeToOrg(orm.em.fork(), target.orgId);
      await em.nativeUpdate(
        ContactImport,
        { id: target.importId, status: 'importing' },
        { status: 'completed', completedAt: new Date(), updatedAt: new Date() },
      );
      const done = await em.findOneOrFail(ContactImport, { id: target.importId });
      await store().delete(row.blobKey);
      logger.info('contact import completed', { importId: target.importId, ...summaryOf(done) });
      return summaryOf(done);
    },

    /** The workflow's last word when the passes kept failing: the import ends failed, with what it did so far. */
    async giveUp(target: ImportTarget, message: string): Promise<ImportSummary> {
      return fail(target, { reason: 'IMPORT_FAILED', message: `The import stopped: ${message}`.slice(0, 500), line: null });
    },
  };
}

export type ContactImportRunner = ReturnType<typeof createContactImportRunner>;
