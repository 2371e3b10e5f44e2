import { readdirSync, readFileSync } from 'node:fs';

/** Resident set size of a process in MB, from /proc/<pid>/status (VmRSS). */
export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kb === undefined) throw new Error(`no VmRSS for process ${pid}`);
  return Number(kb) / 1024;
}

/** Samples the RSS of each process every `intervalMs` until `until` settles; the peak of each. */
export async function peakRss(pids: Record<string, number>, until: Promise<unknown>, intervalMs = 250): Promise<Record<string, number>> {
  const peak = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, rssMb(pid)]));
  let done = false;
  const finished = until.finally(() => (done = true));
  while (!done) {
    await Promise.race([finished, new Promise((resolve) => setTimeout(resolve, intervalMs))]);
    for (const [name, pid] of Object.entries(pids)) peak[name] = Math.max(peak[name]!, rssMb(pid));
  }
  await finished;
  return peak;
}

/** CPU time (user + system) a process has used so far, in ms, from /proc/<pid>/stat (ticks of 10 ms). */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the command: state is field 3, utime field 14 and stime field 15 of the whole line.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU time (ms) used so far by every process whose command name is `comm`, e.g. all PostgreSQL backends. */
export function cpuMsOfCommand(comm: string): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === comm) total += cpuMs(Number(entry));
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return total;
}

/** PostgreSQL's shared background processes (their command line after `postgres: <cluster>: `). */
const PG_BACKGROUND =
  /: (walwriter|checkpointer|background writer|autovacuum launcher|logical replication launcher|archiver|stats collector)\s*$/;

/**
 * CPU time (ms) used so far by each PostgreSQL process working for one database (pid → ms): its
 * backends (and autovacuum workers), whose command lines name it, plus the shared background
 * processes (WAL writer, checkpointer, …). Backends of other databases on the same server
 * (another test run on the machine) are not counted, unlike `comm:postgres`.
 */
function cpuMsOfDatabaseByPid(database: string): Map<number, number> {
  const byPid = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue;
      const line = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      // A backend's line names the database mid-line; an autovacuum worker's ends with it.
      if (line.includes(` ${database} `) || line.endsWith(` ${database}`) || PG_BACKGROUND.test(line))
        byPid.set(Number(entry), cpuMs(Number(entry)));
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return byPid;
}

/**
 * PostgreSQL's CPU ms for `database` since `before` (a cpuMsOfDatabaseByPid reading): each
 * process's growth, a process started since counted whole. A process that ended since counts
 * nothing (its work since `before` is lost, an undercount), where the difference of two sums
 * went negative when a busy backend or autovacuum worker exited in between.
 */
function cpuMsOfDatabaseSince(database: string, before: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of cpuMsOfDatabaseByPid(database)) total += ms - Math.min(ms, before.get(pid) ?? 0);
  return total;
}

/**
 * Starts a CPU account over named processes (by pid, `this` for the calling process,
 * `comm:<name>` for every process of that command name, or `pg:<database>` for PostgreSQL's
 * work for one database); `perUnit(n)` gives each one's CPU ms per unit of work since the
 * start, and `total` their sum.
 */
export function cpuAccount(sources: Record<string, number | 'this' | `comm:${string}` | `pg:${string}`>) {
  const started = Object.entries(sources).map(([name, source]) => [name, startReading(source)] as const);
  return {
    perUnit(units: number): Record<string, number> {
      const figures = Object.fromEntries(started.map(([name, since]) => [name, since() / units]));
      return { ...figures, total: Object.values(figures).reduce((sum, value) => sum + value, 0) };
    },
  };
}

/** Reads `source` now; the function returned gives its CPU ms since. */
function startReading(source: number | string): () => number {
  if (typeof source === 'string' && source.startsWith('pg:')) {
    const database = source.slice('pg:'.length);
    const before = cpuMsOfDatabaseByPid(database);
    return () => cpuMsOfDatabaseSince(database, before);
  }
  const read = (): number => {
    if (source === 'this') {
      const usage = process.cpuUsage();
      return (usage.user + usage.system) / 1000;
    }
    return typeof source === 'string' ? cpuMsOfCommand(source.slice('comm:'.length)) : cpuMs(source);
  };
  const before = read();
  return () => read() - before;
}

/** The cpuAccount source for PostgreSQL's work on the database of `databaseUrl`. */
export function postgresOf(databaseUrl: string): `pg:${string}` {
  return `pg:${decodeURIComponent(new URL(databaseUrl).pathname.slice(1))}`;
}

/**
 * CPU time (ms) each kind of thread of a process has used so far, by thread name
 * (/proc/<pid>/task/<tid>/comm: `node` for the main and worker_threads, `V8 DefaultWorke`
 * for V8's GC and compiler helpers, `libuv-worker` for the threadpool, `tokio-runtime-w`
 * for Temporal's core), summed over threads of the same name. Threads that ended are missing.
 */
export function cpuMsByThread(pid: number): Record<string, number> {
  const byName: Record<string, number> = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = tid === String(pid) ? 'main' : readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      byName[name] = (byName[name] ?? 0) + (Number(fields[11]) + Number(fields[12])) * 10;
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return byName;
}
