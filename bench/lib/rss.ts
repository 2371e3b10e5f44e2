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
