// The Node flags of each Herald process. Plain JavaScript, because the launcher
// (src/cli/herald.mjs) runs on any Node before it picks one that can load TypeScript; the
// development stack, the tests and the benchmarks import the same function (src/dev/paths.ts).

/**
 * The worker's V8 old-space limit by default, MB (HERALD_WORKER_HEAP_MB overrides): with
 * Node's default (a quarter of the machine's memory) V8 lets the heap grow to several times the
 * live data under a steady allocation rate (measured: 740 MB RSS during a broadcast, live heap
 * under 200 MB); with 512 MB it collects earlier and stays near 460 MB at the same throughput.
 */
export const WORKER_HEAP_MB = 512;

/**
 * V8's young generation cap for Herald's worker and smtp processes, MB per semi-space. Node 24's
 * default lets the young generation grow to several times this during start-up (modules compiled,
 * the ORM's metadata built) and never gives it back: the all-in-one process idled at ~250 MB,
 * ~60 MB of it young-generation pages. At 8 MB a scavenge runs every few dozen ms at a full api
 * load and stays short (BENCHMARKS.md, footprint-start).
 */
export const SEMI_SPACE_MB = 8;

/**
 * The young generation cap of a process that serves the API (`herald api`, and `herald all` /
 * `herald dev`, which `npm start` runs), where throughput and tail latency matter more than idle
 * memory: at 8 MB a list page at 50 connections spent 14–29 % of the api's busy time in GC; at
 * 32 MB the api's CPU per request fell from 0.24–0.30 to 0.21 ms and p99 from 46–58 to 38–45 ms
 * (BENCHMARKS.md, 2026-11-28 08:39). V8 grows the young generation to the cap only under
 * allocation pressure, and the all-in-one process gives it back after start-up and after each
 * busy period (releaseMemoryWhenIdle, src/cli/start-process.ts), so its idle footprint stays
 * within issue 35's (BENCHMARKS.md, 2026-11-28 10:39).
 */
export const API_SEMI_SPACE_MB = 32;

/** The processes that host the api, the worker and smtp in one (npm start runs `dev`). */
const ALL_IN_ONE = new Set(['all', 'dev']);
const SERVES_API = new Set(['api', 'all', 'dev']);
const RUNS_WORKER = new Set(['worker', 'all', 'dev']);

/**
 * Node flags for a Herald process of `kind` (api, worker, smtp, all, dev; none for any other
 * command): the young generation cap (API_SEMI_SPACE_MB where the api is served, else
 * SEMI_SPACE_MB); for the all-in-one process `gc` exposed for the memory-reducing collection
 * after busy periods (releaseMemoryWhenIdle: it stops the event loop for up to a second, which a
 * dedicated api process is spared); where the worker runs, its heap limit.
 *
 * @param {string} kind
 * @param {Record<string, string | undefined>} [env]
 * @returns {string[]}
 */
export function nodeFlagsFor(kind, env = process.env) {
  if (!SERVES_API.has(kind) && !RUNS_WORKER.has(kind) && kind !== 'smtp') return [];
  const semiSpaceMb = SERVES_API.has(kind) ? API_SEMI_SPACE_MB : SEMI_SPACE_MB;
  const flags = [`--max-semi-space-size=${semiSpaceMb}`, ...(ALL_IN_ONE.has(kind) ? ['--expose-gc'] : [])];
  if (!RUNS_WORKER.has(kind)) return flags;
  const mb = Number(env.HERALD_WORKER_HEAP_MB ?? WORKER_HEAP_MB);
  return Number.isInteger(mb) && mb > 0 ? [`--max-old-space-size=${mb}`, ...flags] : flags;
}
