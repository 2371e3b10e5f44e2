import { fmt } from './stats.ts';
import type { Stat } from './types.ts';

/**
 * Issue 35's cost model: CPU milliseconds per item spent by each of Herald's processes and the
 * services it drives, summed over the steps of a pipeline, against a goal per item. The
 * benchmark's own process (load generator, receiver, API poller) is not counted: it stands for
 * the customer and the outside world.
 */
const PIPELINES = [
  { item: 'send (accept + deliver)', benchmark: 'sends', prefixes: ['cpu_ms_per_accept_', 'cpu_ms_per_delivery_'], goalMs: 4 },
  { item: 'webhook delivery', benchmark: 'webhooks', prefixes: ['cpu_ms_per_delivery_'], goalMs: 1 },
  { item: 'inbound message', benchmark: 'inbound', prefixes: ['cpu_ms_per_message_'], goalMs: 8 },
] as const;

export const COST_PROCESSES = ['api', 'worker', 'smtp', 'postgres', 'temporal'] as const;

export interface CostRow {
  item: string;
  benchmark: string;
  /** Median CPU ms per item of each process (0 when the pipeline does not use it). */
  perProcess: Record<(typeof COST_PROCESSES)[number], number>;
  totalMs: number;
  goalMs: number;
}

/** The cost rows of the pipelines whose benchmark has results with CPU figures. */
export function costModel(benchmarks: Record<string, { stats: Record<string, Stat>; error?: string }>): CostRow[] {
  const rows: CostRow[] = [];
  for (const pipeline of PIPELINES) {
    const result = benchmarks[pipeline.benchmark];
    if (result === undefined || result.error !== undefined) continue;
    const perProcess = Object.fromEntries(
      COST_PROCESSES.map((process) => [
        process,
        pipeline.prefixes.reduce((sum, prefix) => sum + (result.stats[`${prefix}${process}`]?.median ?? 0), 0),
      ]),
    ) as CostRow['perProcess'];
    const totalMs = Object.values(perProcess).reduce((a, b) => a + b, 0);
    if (totalMs === 0) continue;
    rows.push({ item: pipeline.item, benchmark: pipeline.benchmark, perProcess, totalMs, goalMs: pipeline.goalMs });
  }
  return rows;
}

/** `bench cost <item>: …` lines, as the harness prints them. */
export function costLines(rows: readonly CostRow[]): string[] {
  return rows.map(
    (row) =>
      `bench cost ${row.item}: ${fmt(row.totalMs)} CPU ms per item (${COST_PROCESSES.filter((p) => row.perProcess[p] > 0)
        .map((p) => `${p} ${fmt(row.perProcess[p])}`)
        .join(', ')}; goal ≤ ${row.goalMs} ms: ${row.totalMs <= row.goalMs ? 'met' : 'MISSED'})`,
  );
}

/** The cost rows as a Markdown table. */
export function costTable(rows: readonly CostRow[]): string[] {
  if (rows.length === 0) return [];
  return [
    '## Cost per item: CPU ms per item of each process (median run; the benchmark process not counted)',
    '',
    '| item | api | worker | smtp | PostgreSQL | Temporal | total | goal | met |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (row) =>
        `| ${row.item} | ${COST_PROCESSES.map((p) => (row.perProcess[p] > 0 ? fmt(row.perProcess[p]) : '–')).join(' | ')} | ${fmt(row.totalMs)} | ≤ ${row.goalMs} | ${row.totalMs <= row.goalMs ? 'yes' : '**no**'} |`,
    ),
    '',
  ];
}
