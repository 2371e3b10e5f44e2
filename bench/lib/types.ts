import type { BenchContext } from './context.ts';

/** Named numbers one run measures, e.g. `{ herald_rps: 1830, herald_p99_ms: 61 }`. */
export type Figures = Record<string, number>;

/** One figure over all runs of a benchmark. */
export interface Stat {
  median: number;
  min: number;
  max: number;
  runs: number[];
}

/**
 * One printed line, `bench <name>: <figure> (<ratio> of <baseline>)`: a headline figure and
 * its ratio to a baseline measured in the same run, so lines compare across noisy machines.
 */
export interface Summary {
  name: string;
  figure: string;
  /** headline ÷ baseline. */
  ratio: number;
  baseline: string;
  /** The target, when it sets one. */
  target?: { text: string; met: boolean };
}

/** A benchmark after its setup: data seeded, processes started. */
export interface Session {
  /** Exercises the whole path once or for a short while; nothing is recorded. */
  warmup(): Promise<void>;
  /** One measured run (the harness calls it `runs` times). */
  run(index: number): Promise<Figures>;
  /** Stops what setup started; the harness calls it even when a run failed. */
  close(): Promise<void>;
}

/**
 * A benchmark, one file `bench/<name>.ts` exporting `benchmark`. The harness (bench/run.ts)
 * gives it a context (databases cloned from a migrated template, Redis with a key prefix, the
 * Temporal dev server, api/worker/smtp child processes, autocannon and pg loops), warms it up,
 * runs it at least three times and reports median and min–max of every figure.
 */
export interface Benchmark {
  name: string;
  /** One sentence for the report: what is measured against which baseline. */
  description: string;
  /**
   * Whether it needs the Temporal dev server: `true` shares the run's (started once, on first
   * need); `'own'` gets a fresh one for itself (when its figures depend on the server's state).
   */
  needsTemporal?: boolean | 'own';
  setup(context: BenchContext): Promise<Session>;
  /** The summary lines from the median of each figure (and min–max where it helps). */
  summarize(stats: Record<string, Stat>): Summary[];
}
