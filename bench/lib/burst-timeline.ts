import { readdirSync, readFileSync } from 'node:fs';
import type { MikroORM } from '@mikro-orm/postgresql';
import { cpuAccount, cpuMs } from './proc.ts';
import { quantile } from './stats.ts';

/**
 * The sends burst's timeline (issue 35 item 2: why delivery lags acceptance while both run):
 * every `intervalMs`, the sends answered 202 and the messages at the relay so far, the queue as
 * PostgreSQL holds it (queued: accepted, not claimed; sending: claimed, not yet recorded: the
 * drain's in-flight window), the relay's open connections (sockets on the sink's port), the
 * machine's busy CPU and runnable threads (other sessions' work included), and for each process
 * (PostgreSQL: its work for the run's database) its CPU and its threads' run-queue wait over the
 * interval (ms per s: 1,000 is one core busy, or one thread waiting for a core the whole time),
 * the worker's threads apart.
 * After the burst, from the rows themselves: each claim (its emails share `first_attempt_at`,
 * the claim's transaction time) and where each email's time went (created → claimed → relay
 * answered → recorded).
 */

interface Sample {
  ms: number;
  /** The machine: its cores busy (ms per s, every process) and the threads runnable at the sample (/proc/stat). */
  machineBusy: number;
  runnable: number;
  accepted: number;
  relayed: number;
  queued: number;
  sending: number;
  connections: number;
  cpu: Record<string, number>;
  wait: Record<string, number>;
}

/** Run time and run-queue wait (ms) of each thread of `pid` by thread name (`main` for the main thread), from /proc/<pid>/task/<tid>/schedstat. */
function schedOf(pid: number): Map<string, { run: number; wait: number }> {
  const byName = new Map<string, { run: number; wait: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const [run, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
      const name = tid === String(pid) ? 'main' : readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const sum = byName.get(name) ?? { run: 0, wait: 0 };
      byName.set(name, { run: sum.run + (run ?? 0) / 1e6, wait: sum.wait + (wait ?? 0) / 1e6 });
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return byName;
}

/** The machine's busy CPU time so far (ms, all cores: user, nice, system, irq, softirq, steal) and the threads runnable now, from /proc/stat. */
function machine(): { busy: number; runnable: number } {
  const stat = readFileSync('/proc/stat', 'utf8');
  const ticks = (/^cpu\s+(.*)$/m.exec(stat)?.[1] ?? '').split(/\s+/).map(Number);
  const busy = [0, 1, 2, 5, 6, 7].reduce((sum, i) => sum + (ticks[i] ?? 0), 0) * 10;
  return { busy, runnable: Number(/^procs_running\s+(\d+)$/m.exec(stat)?.[1] ?? 0) };
}

/** Open TCP connections whose local port is `port` (the relay's side of each pooled connection). */
function connectionsTo(port: number): number {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let count = 0;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    try {
      for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
        const [, local, , state] = line.trim().split(/\s+/);
        if (local?.endsWith(hex) && state === '01') count += 1;
      }
    } catch {
      // No IPv6 table.
    }
  }
  return count;
}

export function startBurstTimeline(options: {
  orm: MikroORM;
  intervalMs: number;
  relayPort: number;
  /** Processes by name; `worker` also gets each of its threads apart (`worker:<thread name>`, `worker:main`). */
  pids: Record<string, number>;
  /** PostgreSQL's work for the run's database (a cpuAccount source, `pg:<database>`). */
  postgres: `pg:${string}`;
  accepted(): number;
  relayed(): number;
}) {
  const { orm, intervalMs, pids } = options;
  const startedAt = Date.now();
  const samples: Sample[] = [];
  const readCpu = () => {
    const out: Record<string, number> = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMs(pid)]));
    if (pids.worker) for (const [thread, { run }] of schedOf(pids.worker)) out[`worker:${thread}`] = run;
    return out;
  };
  const readWait = () => {
    const out: Record<string, number> = {};
    for (const [name, pid] of Object.entries(pids)) {
      const threads = schedOf(pid);
      out[name] = [...threads.values()].reduce((sum, t) => sum + t.wait, 0);
      if (name === 'worker') for (const [thread, { wait }] of threads) out[`worker:${thread}`] = wait;
    }
    return out;
  };
  let lastCpu = readCpu();
  let lastMachine = machine();
  // PostgreSQL's CPU for the database so far: each sample adds the growth of its processes since the one before.
  let postgres = cpuAccount({ postgres: options.postgres });
  let postgresMs = 0;
  let lastWait = readWait();
  let lastAt = startedAt;
  let stopped = false;
  let samplerMs = 0;

  async function sample(): Promise<void> {
    const [row] = await orm.em.getConnection().execute<{ queued: string; sending: string }[]>(
      `select count(*) filter (where status = 'queued') as queued, count(*) filter (where status = 'sending') as sending
         from transactional_emails where status in ('queued', 'sending')`,
    );
    // The reading's own CPU in this process (its /proc scans): counted in the bench's `bench` figure.
    const usage = process.cpuUsage();
    const now = Date.now();
    const cpu = readCpu();
    const wait = readWait();
    const seconds = (now - lastAt) / 1000;
    const host = machine();
    postgresMs += postgres.perUnit(1).postgres ?? 0;
    postgres = cpuAccount({ postgres: options.postgres });
    cpu.postgres = postgresMs;
    const perSecond = (a: Record<string, number>, b: Record<string, number>) =>
      Object.fromEntries(Object.entries(a).map(([name, value]) => [name, (value - (b[name] ?? 0)) / seconds]));
    samples.push({
      ms: now - startedAt,
      machineBusy: (host.busy - lastMachine.busy) / seconds,
      runnable: host.runnable,
      accepted: options.accepted(),
      relayed: options.relayed(),
      queued: Number(row?.queued ?? 0),
      sending: Number(row?.sending ?? 0),
      connections: connectionsTo(options.relayPort),
      cpu: perSecond(cpu, lastCpu),
      wait: perSecond(wait, lastWait),
    });
    lastCpu = cpu;
    lastMachine = host;
    lastWait = wait;
    lastAt = now;
    const spent = process.cpuUsage(usage);
    samplerMs += (spent.user + spent.system) / 1000;
  }

  const loop = (async () => {
    while (!stopped) {
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
      await sample();
    }
  })();

  return {
    startedAt,
    /** Stops sampling; the timeline as a text table, and the CPU ms its readings took in this process. */
    async stop(): Promise<{ text: string; samplerMs: number }> {
      stopped = true;
      await loop;
      const names = [...new Set(samples.flatMap((s) => Object.keys(s.cpu)))];
      const waits = [...new Set(samples.flatMap((s) => Object.keys(s.wait)))];
      // Names without spaces: the table splits on whitespace.
      const header = [
        't_ms',
        'accepted',
        'relayed',
        'queued',
        'sending',
        'relay_conns',
        'host_busy',
        'runnable',
        ...names.map((n) => `cpu:${n}`),
        ...waits.map((n) => `wait:${n}`),
      ];
      const rows = samples.map((s) => [
        s.ms,
        s.accepted,
        s.relayed,
        s.queued,
        s.sending,
        s.connections,
        Math.round(s.machineBusy),
        s.runnable,
        ...names.map((n) => Math.round(s.cpu[n] ?? 0)),
        ...waits.map((n) => Math.round(s.wait[n] ?? 0)),
      ]);
      const table = [header, ...rows].map((cells) => cells.map((c) => String(c).padStart(9)).join(' ')).join('\n');
      return { text: `${table}\nthe readings took ${Math.round(samplerMs)} CPU ms of this process (part of its figure)`, samplerMs };
    },
  };
}

/**
 * The burst's claims and where its emails' time went, read from the rows written since
 * `sinceMs`: claims (emails sharing `first_attempt_at`) by size and over time, and per email
 * the medians and p90s of created → claimed (waiting in the queue), claimed → relay answered
 * (the in-flight window: composing, signing, the SMTP transaction) and answered → recorded.
 */
export async function burstClaims(orm: MikroORM, sinceMs: number): Promise<{ text: string; figures: Record<string, number> }> {
  const rows = await orm.em.getConnection().execute<{ created: number; claimed: number; answered: number | null; recorded: number }[]>(
    `select (extract(epoch from created_at) * 1000)::float8 as created, (extract(epoch from first_attempt_at) * 1000)::float8 as claimed,
            (extract(epoch from sent_at) * 1000)::float8 as answered, (extract(epoch from updated_at) * 1000)::float8 as recorded
       from transactional_emails where created_at >= to_timestamp(? / 1000.0) and first_attempt_at is not null`,
    [sinceMs],
  );
  const claims = new Map<number, number>();
  for (const row of rows) claims.set(row.claimed, (claims.get(row.claimed) ?? 0) + 1);
  const sizes = [...claims.values()].sort((a, b) => a - b);
  const ordered = [...claims.entries()].sort((a, b) => a[0] - b[0]);
  const sorted = (values: number[]) => values.sort((a, b) => a - b);
  const waited = sorted(rows.map((r) => r.claimed - r.created));
  const window = sorted(rows.filter((r) => r.answered !== null).map((r) => (r.answered as number) - r.claimed));
  const recording = sorted(rows.filter((r) => r.answered !== null).map((r) => r.recorded - (r.answered as number)));
  const figures = {
    claims: claims.size,
    claim_size_p50: quantile(sizes, 0.5),
    claim_size_max: sizes.at(-1) ?? 0,
    queue_wait_p50_ms: quantile(waited, 0.5),
    queue_wait_p90_ms: quantile(waited, 0.9),
    in_window_p50_ms: quantile(window, 0.5),
    in_window_p90_ms: quantile(window, 0.9),
    record_p50_ms: quantile(recording, 0.5),
  };
  const first = ordered[0]?.[0] ?? 0;
  const timeline = ordered.map(([at, size]) => `+${Math.round(at - first)}ms:${size}`).join(' ');
  const text = `${Object.entries(figures)
    .map(([name, value]) => `${name} ${Math.round(value)}`)
    .join(', ')}\nclaims (ms after the first : emails): ${timeline}`;
  return { text, figures };
}
