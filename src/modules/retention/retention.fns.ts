/** The kinds of records with a retention period of their own (RETENTION_<KIND>_DAYS). */
export const RETENTION_KINDS = ['emails', 'webhooks', 'inbound', 'contactImports'] as const;
export type RetentionKind = (typeof RETENTION_KINDS)[number];

const DAY_MS = 86_400_000;

/**
 * The smallest id of a record created `days` before `now`: every id below it belongs to an
 * older record (ids begin with their creation second, db/ids.ts), so `id < idBefore(now, days)`
 * is the age condition, served by the primary key.
 */
export function idBefore(now: Date, days: number): string {
  const seconds = Math.floor((now.getTime() - days * DAY_MS) / 1000);
  return Math.max(0, seconds).toString(16).padStart(8, '0') + '0'.repeat(16);
}
