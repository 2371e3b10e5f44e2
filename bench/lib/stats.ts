import type { Figures, Stat } from './types.ts';

/** The value at quantile `q` (0..1) of ascending `sorted` (nearest rank). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Median and min–max of every figure over the runs (a figure missing from a run is skipped). */
export function summarizeRuns(runs: readonly Figures[]): Record<string, Stat> {
  const names = [...new Set(runs.flatMap((run) => Object.keys(run)))];
  return Object.fromEntries(
    names.map((name) => {
      const values = runs.map((run) => run[name]).filter((value): value is number => value !== undefined && Number.isFinite(value));
      return [name, { median: median(values), min: Math.min(...values), max: Math.max(...values), runs: values }];
    }),
  );
}

/** A number for people: 3 significant digits, thousands grouped. */
export function fmt(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : 2;
  return value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

/** `1,830 (1,700–1,910)`: the median and the spread of the runs. */
export function spread(stat: Stat | undefined): string {
  if (!stat) return 'n/a';
  return `${fmt(stat.median)} (${fmt(stat.min)}–${fmt(stat.max)})`;
}

/** A ratio as a percentage, `41 %`, or as a multiple from 10 up, `350×`. */
export function percent(ratio: number): string {
  if (!Number.isFinite(ratio)) return 'n/a';
  if (ratio >= 10) return `${fmt(ratio)}×`;
  return `${(ratio * 100).toFixed(ratio < 0.1 ? 1 : 0)} %`;
}

/** The median of a figure that must be present. */
export function med(stats: Record<string, Stat>, name: string): number {
  return stats[name]?.median ?? Number.NaN;
}
