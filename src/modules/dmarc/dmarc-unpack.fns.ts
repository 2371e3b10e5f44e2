import { gunzipSync } from 'node:zlib';
import { Unzip, UnzipInflate } from 'fflate';

/**
 * The most bytes one attachment may decompress to (all the entries of a zip together): real
 * aggregate reports are kilobytes, a big reporter's day a few megabytes; past this the
 * attachment is refused as a decompression bomb (docs/decisions.md).
 */
export const MAX_REPORT_XML_BYTES = 20 * 1024 * 1024;
/** Entries of one zip read at most; reports hold one. */
const MAX_ZIP_ENTRIES = 10;
/** Compressed bytes fed to the zip inflater at a time, so one step never inflates more than ~1 MB per KB fed. */
const ZIP_SLICE_BYTES = 16 * 1024;

/** Why an attachment yields no report. */
export class DmarcReportError extends Error {
  readonly reason: 'too_large' | 'bad_archive' | 'malformed';

  constructor(reason: DmarcReportError['reason'], message: string) {
    super(message);
    this.reason = reason;
    this.name = 'DmarcReportError';
  }
}

export type ReportContainer = 'xml' | 'gzip' | 'zip';

/** What the bytes are, by their magic numbers (senders' file names and content types vary too much to trust). */
export function containerOf(bytes: Uint8Array): ReportContainer {
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) return 'gzip';
  if (bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04) return 'zip';
  return 'xml';
}

function tooLarge(limit: number): DmarcReportError {
  return new DmarcReportError('too_large', `the report decompresses to more than ${limit} bytes`);
}

function gunzipBounded(bytes: Uint8Array, limit: number): Buffer {
  try {
    return gunzipSync(bytes, { maxOutputLength: limit });
  } catch (error) {
    if (error instanceof RangeError || (error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(limit);
    throw new DmarcReportError('bad_archive', `not a readable gzip file (${(error as Error).message})`);
  }
}

function unzipBounded(bytes: Uint8Array, limit: number): Buffer[] {
  const files: Buffer[] = [];
  let total = 0;
  let entries = 0;
  let failure: DmarcReportError | null = null;
  const unzip = new Unzip((file) => {
    entries += 1;
    if (entries > MAX_ZIP_ENTRIES || file.name.endsWith('/')) return;
    const chunks: Uint8Array[] = [];
    file.ondata = (error, chunk, final) => {
      if (failure) return;
      if (error) {
        failure = new DmarcReportError('bad_archive', `not a readable zip file (${error.message})`);
        return;
      }
      total += chunk.length;
      if (total > limit) {
        failure = tooLarge(limit);
        file.terminate();
        return;
      }
      chunks.push(chunk);
      if (final) files.push(Buffer.concat(chunks));
    };
    try {
      file.start();
    } catch (error) {
      failure = new DmarcReportError('bad_archive', `unsupported zip entry (${(error as Error).message})`);
    }
  });
  unzip.register(UnzipInflate);
  try {
    for (let offset = 0; offset < bytes.length && !failure; offset += ZIP_SLICE_BYTES) {
      const end = Math.min(offset + ZIP_SLICE_BYTES, bytes.length);
      unzip.push(bytes.subarray(offset, end), end === bytes.length);
    }
  } catch (error) {
    failure ??= new DmarcReportError('bad_archive', `not a readable zip file (${(error as Error).message})`);
  }
  if (failure) throw failure;
  if (files.length === 0) throw new DmarcReportError('bad_archive', 'the zip file holds no report');
  return files;
}

/**
 * The XML documents an attachment holds: itself, its gunzipped bytes, or the entries of its
 * zip, never more than `limit` bytes decompressed (DmarcReportError too_large past it).
 */
export function unpackReport(bytes: Uint8Array, limit = MAX_REPORT_XML_BYTES): string[] {
  const container = containerOf(bytes);
  if (container === 'gzip') return [gunzipBounded(bytes, limit).toString('utf8')];
  if (container === 'zip') return unzipBounded(bytes, limit).map((file) => file.toString('utf8'));
  if (bytes.length > limit) throw tooLarge(limit);
  return [Buffer.from(bytes).toString('utf8')];
}
