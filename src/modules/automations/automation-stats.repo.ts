/**
 * An automation's six counters, kept in STAT_SHARDS rows (automation_stat_shards). Every change
 * adds its deltas to one shard picked at random, in the transaction that makes the change, so
 * the sums are exact across crashes and concurrent writers (the API enrolling contacts, several
 * drains) rarely queue on one row. Raw SQL: every statement names the workspace itself.
 */
import { randomInt } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { EMPTY_AUTOMATION_STATS, type AutomationStats } from '../../../db/entities/index.ts';

export const STAT_SHARDS = 8;

export type StatDeltas = Partial<AutomationStats>;

const COLUMNS = {
  totalRuns: 'total_runs',
  activeRuns: 'active_runs',
  completedRuns: 'completed_runs',
  failedRuns: 'failed_runs',
  emailsSent: 'emails_sent',
  creditsUsed: 'credits_used',
} as const satisfies Record<keyof AutomationStats, string>;

const KEYS = Object.keys(COLUMNS) as (keyof AutomationStats)[];

/** Adds each automation's deltas (those that are not all zero) to one of its shards. */
export async function addStats(em: EntityManager, orgId: string, deltas: ReadonlyMap<string, StatDeltas>): Promise<void> {
  const rows = [...deltas].filter(([, d]) => KEYS.some((key) => (d[key] ?? 0) !== 0));
  if (rows.length === 0) return;
  const values = rows.map(([automationId, d]) => [automationId, randomInt(STAT_SHARDS), ...KEYS.map((key) => d[key] ?? 0)]);
  const columns = KEYS.map((key) => COLUMNS[key]);
  // Sorted, so two transactions touching the same shards take their locks in one order.
  values.sort((a, b) => String(a[0]).localeCompare(String(b[0])) || Number(a[1]) - Number(b[1]));
  await em.execute(
    `insert into automation_stat_shards (automation_id, shard, org_id, ${columns.join(', ')})
     values ${values.map(() => `(?, ?, ?, ${columns.map(() => '?').join(', ')})`).join(', ')}
     on conflict (automation_id, shard) do update set ${columns.map((c) => `${c} = automation_stat_shards.${c} + excluded.${c}`).join(', ')}`,
    values.flatMap(([automationId, shard, ...counts]) => [automationId, shard, orgId, ...counts]),
    'run',
  );
}

/** The counters of some automations of a workspace (zeros for one that never ran). */
export async function readStats(em: EntityManager, orgId: string, automationIds: readonly string[]): Promise<Map<string, AutomationStats>> {
  const stats = new Map<string, AutomationStats>(automationIds.map((id) => [id, { ...EMPTY_AUTOMATION_STATS }]));
  if (automationIds.length === 0) return stats;
  const rows = await em.execute<Record<string, number | string>[]>(
    `select automation_id, ${KEYS.map((key) => `sum(${COLUMNS[key]})::int as "${key}"`).join(', ')}
       from automation_stat_shards where org_id = ? and automation_id in (?) group by automation_id`,
    [orgId, [...automationIds]],
  );
  for (const row of rows) {
    const out = { ...EMPTY_AUTOMATION_STATS };
    for (const key of KEYS) out[key] = Number(row[key] ?? 0);
    stats.set(String(row.automation_id), out);
  }
  return stats;
}

/**
 * Takes back from `creditsUsed` the credits given back for an automation email (it failed before
 * any hand-off, or was cancelled), in the transaction that gives them back, so the automation's
 * counter says what its emails cost in the end.
 */
export async function refundRunCredits(em: EntityManager, orgId: string, runId: string, credits: number): Promise<void> {
  if (credits === 0) return;
  const [run] = await em.execute<{ automation_id: string }[]>(`select automation_id from automation_runs where id = ? and org_id = ?`, [
    runId,
    orgId,
  ]);
  if (run) await addStats(em, orgId, new Map([[run.automation_id, { creditsUsed: -credits }]]));
}
