/**
 * 7b. Footprint of `npm start`: the resident memory (VmRSS) of every Node process the command
 * runs, as a user starts it (`npm start` in the repository: npm, and the dev supervisor, which
 * hosts api, worker and smtp; any child Node process counts as Herald's too), idle after
 * start, at the peak of a burst of 10,000 webhook deliveries (1,000 events fanned out to 10
 * endpoints on a receiver at 127.0.0.1), and one
 * minute after the burst's last delivery. PostgreSQL, Redis and the Temporal dev server are
 * not counted (the supervisor starts Temporal itself, with a state directory of its own; the
 * harness's PostgreSQL and Redis are given to it). Baseline: a bare Node process.
 * Targets (issue 35): Herald's processes idle ≤ 300 MB; back under 400 MB a minute after the burst.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Event, WebhookEndpoint } from '../db/entities/index.ts';
import { createOrm } from '../db/orm.ts';
import { encryptSecret } from '../src/crypto/secret-box.ts';
import { writeEnvFile } from '../src/dev/dev-env-file.ts';
import { REPO_ROOT } from '../src/dev/paths.ts';
import { waitFor } from '../src/dev/processes.ts';
import { recordEvent } from '../src/modules/events/events.fns.ts';
import { startWebhookReceiver } from '../test/support/webhook-receiver.ts';
import type { BenchContext } from './lib/context.ts';
import { rssMb } from './lib/proc.ts';
import { fmt, med } from './lib/stats.ts';
import type { Benchmark, Figures } from './lib/types.ts';

const ENDPOINTS = 10;
const EVENTS = 1_000;
const SETTLE_MS = 10_000;
const AFTER_MS = 60_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The Node processes under `root` (itself included), each with the role it plays in `npm start`. */
type Role = 'npm' | 'supervisor' | 'herald' | 'other';

function nodeTree(root: number): { pid: number; role: Role }[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const tree = new Set([root]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, parent] of parents) {
      if (tree.has(parent) && !tree.has(pid)) grew = tree.add(pid) !== undefined;
    }
  }
  return [...tree].flatMap((pid): { pid: number; role: Role }[] => {
    let args: string[];
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      return [];
    }
    const exe = args[0] ?? '';
    if (pid === root) return [{ pid, role: 'npm' }];
    if (!/node$/.test(exe)) return [];
    if (args.some((arg) => arg.endsWith('herald.mjs')) || args.includes('dev')) return [{ pid, role: 'supervisor' }];
    if (args.some((arg) => arg.endsWith('main.ts'))) return [{ pid, role: 'herald' }];
    return [{ pid, role: 'other' }];
  });
}

/** RSS in MB of the stack's Node processes by role, and Herald's (supervisor + herald) summed. */
function sample(root: number): { npm: number; supervisor: number; herald: number; total: number } {
  const sum = { npm: 0, supervisor: 0, herald: 0, other: 0 };
  for (const { pid, role } of nodeTree(root)) {
    try {
      sum[role] += rssMb(pid);
    } catch {
      // exited between the listing and the read
    }
  }
  return { npm: sum.npm, supervisor: sum.supervisor, herald: sum.herald + sum.other, total: sum.supervisor + sum.herald + sum.other };
}

/** The child `herald all`'s share, or that the supervisor hosts it (npm start without HERALD_DEV_SPLIT). */
const hosted = (mb: number) => (mb > 0 ? `herald all ${fmt(mb)}` : 'herald all hosted in it');

export const benchmark: Benchmark = {
  name: 'footprint-start',
  description: `VmRSS of the Node processes of \`npm start\` (npm, the dev supervisor, herald all), idle, at the peak of ${EVENTS * ENDPOINTS} webhook deliveries and ${AFTER_MS / 1000} s after them, against a bare Node process.`,
  needsTemporal: false,

  async setup(context: BenchContext) {
    const databaseUrl = await context.database();
    context.log('database ready');
    const workspace = await context.workspace(databaseUrl);
    const receiver = await startWebhookReceiver();
    context.defer(() => receiver.close());
    const orm = await createOrm({ databaseUrl, poolMax: 2 });
    context.defer(() => orm.close());
    const em = orm.em.fork();
    em.setFilterParams('tenant', { orgId: workspace.orgId });
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    for (let i = 0; i < ENDPOINTS; i += 1) {
      em.create(WebhookEndpoint, {
        orgId: workspace.orgId,
        name: `burst ${i}`,
        url: receiver.url(`/burst-${i}`),
        description: '',
        events: ['contact.created'],
        enabled: true,
        secretEncrypted: encryptSecret(Buffer.from(context.services.encryptionKey, 'base64'), secret),
        keyMode: 'test',
        disabledReason: null,
        disabledAt: null,
      });
    }
    await em.flush();
    context.log('endpoints created; starting npm start');

    const port = async () => String(await context.freePort());
    const dataDir = join(context.scratch, 'data');
    // The dev stack keeps its encryption key in <data>/dev.env: the harness's, which sealed the endpoints' secrets.
    writeEnvFile(join(dataDir, 'dev.env'), { HERALD_ENCRYPTION_KEY: context.services.encryptionKey });
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HERALD_DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      REDIS_URL: context.services.redisUrl,
      REDIS_KEY_PREFIX: `herald-bench:${context.services.runId}footprintstart:`,
      PORT: await port(),
      SMTP_PORT: await port(),
      SMTP_SUBMISSION_PORT: await port(),
      TEMPORAL_PORT: await port(),
      TEMPORAL_UI_PORT: await port(),
      MAIL_SINK_HTTP_PORT: await port(),
      METRICS_PORT: await port(),
      CONTACT_DNS_CHECK: 'false',
    };
    delete env.NODE_ENV;
    let output = '';
    const npm = spawn('npm', ['start'], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    npm.stdout.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)));
    npm.stderr.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)));
    const exited = new Promise((resolve) => npm.once('exit', resolve));
    context.defer(async () => {
      if (npm.exitCode === null) process.kill(-npm.pid!, 'SIGTERM');
      await Promise.race([exited, sleep(30_000)]);
    });
    const exitedEarly = exited.then(() => {
      throw new Error(`npm start exited (${npm.exitCode}): ${output.slice(-3000)}`);
    });
    await Promise.race([
      exitedEarly,
      waitFor('npm start', () => Promise.resolve(output.includes('Herald is running') ? true : undefined), 600_000),
    ]);
    exitedEarly.catch(() => {});
    context.log('npm start is running');
    await sleep(SETTLE_MS);
    const firstIdle = sample(npm.pid!);
    const bare = await context.spawnNode(
      'bare-node',
      ['-e', 'console.log("bare node ready"); setInterval(() => {}, 60_000)'],
      'bare node ready',
    );

    const delivered = () => receiver.requests().filter((r) => r.path.startsWith('/burst-')).length;
    const burst = async (): Promise<{ peak: number; seconds: number }> => {
      const before = delivered();
      await em.fork().transactional(async (tx) => {
        const events: Event[] = [];
        for (let i = 0; i < EVENTS; i += 1) events.push(recordEvent(tx, workspace.orgId, 'contact.created', { contact: { n: i } }));
        await tx.flush();
      });
      const started = performance.now();
      let peak = 0;
      while (delivered() - before < EVENTS * ENDPOINTS) {
        if (performance.now() - started > 600_000) throw new Error(`only ${delivered() - before} deliveries in 10 minutes`);
        peak = Math.max(peak, sample(npm.pid!).total);
        await sleep(250);
      }
      return { peak, seconds: (performance.now() - started) / 1000 };
    };

    return {
      async warmup() {
        // None: the first idle figure is the stack as it started.
      },
      async run(index: number): Promise<Figures> {
        // Run 1's idle figure is the stack as it started; later runs' follow the previous burst.
        const idle = index === 0 ? firstIdle : sample(npm.pid!);
        const { peak, seconds } = await burst();
        await sleep(AFTER_MS);
        const after = sample(npm.pid!);
        return {
          bare_node_mb: rssMb(bare.pid),
          fresh_idle_mb: firstIdle.total,
          idle_mb: idle.total,
          idle_supervisor_mb: idle.supervisor,
          idle_herald_mb: idle.herald,
          idle_npm_mb: idle.npm,
          burst_peak_mb: peak,
          burst_seconds: seconds,
          after_minute_mb: after.total,
          after_minute_herald_mb: after.herald,
        };
      },
      close: () => Promise.resolve(),
    };
  },

  summarize(stats) {
    const idle = med(stats, 'fresh_idle_mb');
    const after = med(stats, 'after_minute_mb');
    return [
      {
        name: 'footprint-start-idle',
        figure: `idle after start ${fmt(idle)} MB, after a burst and a minute ${fmt(med(stats, 'idle_mb'))} MB (supervisor ${fmt(med(stats, 'idle_supervisor_mb'))} + ${hosted(med(stats, 'idle_herald_mb'))}; npm itself ${fmt(med(stats, 'idle_npm_mb'))} MB more)`,
        ratio: idle / med(stats, 'bare_node_mb'),
        baseline: `a bare Node process, ${fmt(med(stats, 'bare_node_mb'))} MB`,
        target: { text: '≤ 300 MB', met: idle <= 300 },
      },
      {
        name: 'footprint-start-burst',
        figure: `peak ${fmt(med(stats, 'burst_peak_mb'))} MB over ${fmt(med(stats, 'burst_seconds'))} s of ${EVENTS * ENDPOINTS} deliveries; ${fmt(after)} MB a minute later`,
        ratio: after / med(stats, 'bare_node_mb'),
        baseline: `a bare Node process, ${fmt(med(stats, 'bare_node_mb'))} MB`,
        target: { text: '< 400 MB within a minute', met: after < 400 },
      },
    ];
  },
};
