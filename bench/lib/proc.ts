import { readFileSync } from 'node:fs';

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
