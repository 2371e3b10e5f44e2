import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DevEnv } from '../config.ts';
import { DEV_SETTINGS } from '../settings/dev-settings.ts';
import { fallbackOf } from '../settings/setting.ts';

export const REPO_ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const MAIN_ENTRY = join(REPO_ROOT, 'src/cli/main.ts');

/** The worker's V8 old-space limit by default, MB (HERALD_WORKER_HEAP_MB overrides; src/cli/herald.mjs applies the same). */
export const WORKER_HEAP_MB = Number(fallbackOf(DEV_SETTINGS.HERALD_WORKER_HEAP_MB));

/**
 * V8's young generation cap for Herald's worker and smtp processes, MB per semi-space. Node 24's default lets
 * the young generation grow to several times this during start-up (modules compiled, the ORM's
 * metadata built) and never gives it back: the all-in-one process idled at ~250 MB, ~60 MB of
 * it young-generation pages. At 8 MB a scavenge runs every few dozen ms at a full api load and
 * stays short (BENCHMARKS.md, footprint-start). src/cli/herald.mjs applies the same.
 */
export const SEMI_SPACE_MB = 8;

/**
 * The young generation cap of a process that serves the API (`herald api`, and `herald all`,
 * which `npm start` runs), where throughput and tail latency matter more than idle memory: at
 * 8 MB a list page at 50 connections spent 14–29 % of the api's busy time in GC; at 32 MB the
 * api's CPU per request fell from 0.24–0.30 to 0.21 ms and p99 from 46–58 to 38–45 ms
 * (BENCHMARKS.md, 2026-11-28 08:39). V8 grows the young generation to the cap only under
 * allocation pressure, and Herald gives it back after start-up and after each busy period
 * (releaseMemoryWhenIdle, src/cli/start-process.ts), so the all-in-one process's idle footprint
 * stays within issue 35's (BENCHMARKS.md, 2026-11-28 10:39).
 */
export const API_SEMI_SPACE_MB = 32;

/**
 * Node flags for a Herald process of `kind` (api, worker, smtp, all): the young generation cap
 * (API_SEMI_SPACE_MB for api and all, else SEMI_SPACE_MB), for the all-in-one process `gc`
 * exposed for the memory-reducing collection after busy periods (releaseMemoryWhenIdle), and for the worker a heap limit: with
 * Node's default (a quarter of the machine's memory) V8 lets the heap grow to several times the
 * live data under a steady allocation rate (measured: 740 MB RSS during a broadcast, live heap
 * under 200 MB); with 512 MB it collects earlier and stays near 460 MB at the same throughput.
 */
export function nodeFlagsFor(kind: string, env: Record<string, string | undefined> = process.env): string[] {
  const semiSpaceMb = kind === 'api' || kind === 'all' ? API_SEMI_SPACE_MB : SEMI_SPACE_MB;
  // Only the all-in-one process gives memory back when idle (its footprint is issue 35's): the
  // collection stops the event loop for up to a second, which a dedicated api process is spared.
  const flags = [`--max-semi-space-size=${semiSpaceMb}`, ...(kind === 'all' ? ['--expose-gc'] : [])];
  if (kind !== 'worker' && kind !== 'all') return flags;
  const mb = Number(env.HERALD_WORKER_HEAP_MB ?? WORKER_HEAP_MB);
  return Number.isInteger(mb) && mb > 0 ? [`--max-old-space-size=${mb}`, ...flags] : flags;
}

export function dataDir(env: DevEnv): string {
  return env.HERALD_DATA_DIR ?? join(REPO_ROOT, '.data');
}

/** Build caches live outside the clone, so a fresh clone on the same machine reuses them. */
export function cacheDir(env: DevEnv): string {
  return env.HERALD_CACHE_DIR ?? join(env.HOME || homedir(), '.cache', 'herald');
}
