import type { Readable } from 'node:stream';
import type { StreamRouteResult } from './route.ts';

/** A CSV file as a download: private, never sniffed as something else. */
export function csvDownload(stream: Readable, filename: string): StreamRouteResult {
  return {
    status: 200,
    stream,
    headers: {
      'Content-Type': 'text/csv; charset=utf-8',
      'Content-Disposition': `attachment; filename="${filename}"`,
      'Cache-Control': 'private, no-store',
      'X-Content-Type-Options': 'nosniff',
    },
  };
}
