import type { PostResult } from './webhook-http.ts';

/** Pure helpers of the delivery engine (delivery-engine.ts): payload, retry delay, record texts. */

/** Retry-After may move the next attempt up to this far out (or the scheduled delay, if longer). */
export const MAX_RETRY_AFTER_MS = 3_600_000;
/** The shortest wait a Retry-After can ask for. */
export const MIN_RETRY_AFTER_MS = 1_000;
export const TEXT_LIMIT = 1024;

/** A response excerpt or error as stored: NULs dropped, at most TEXT_LIMIT characters. */
export function clip(text: string | null): string | null {
  if (text === null) return null;
  const clean = text.replace(/\0/g, '');
  return clean.length > TEXT_LIMIT ? `${clean.slice(0, TEXT_LIMIT - 1)}…` : clean;
}

/** The delivered JSON: `{id, object: "event", type, created_at, api_version, data}`. */
export function eventPayload(row: {
  event_id: string;
  event_type: string;
  event_created_ms: number;
  api_version: string;
  data: unknown;
}): string {
  return JSON.stringify({
    id: row.event_id,
    object: 'event',
    type: row.event_type,
    created_at: new Date(Math.round(row.event_created_ms)).toISOString(),
    api_version: row.api_version,
    data: row.data,
  });
}

/**
 * The wait before the next attempt: the schedule's entry for it with the workflow's jitter,
 * replaced by a 429/503 Retry-After bounded to [1 s, max(scheduled, 1 h)].
 */
export function nextDelay(scheduledMs: number, jitter: number, retryAfter: number | null): number {
  const planned = Math.round(scheduledMs * jitter);
  if (retryAfter === null) return planned;
  return Math.min(Math.max(retryAfter, MIN_RETRY_AFTER_MS), Math.max(planned, MAX_RETRY_AFTER_MS));
}

/** The error recorded for an attempt's result; null for a 2xx. */
export function failureText(result: PostResult): string | null {
  if (result.error) return result.error;
  if (result.statusCode === null || (result.statusCode >= 200 && result.statusCode < 300)) return null;
  if (result.statusCode === 410) return 'the receiver answered 410 Gone: endpoint disabled, no further attempts';
  return `the receiver answered HTTP ${result.statusCode}`;
}
