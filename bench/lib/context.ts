import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { createOrm } from '../../db/orm.ts';
import { loadDevEnv } from '../../src/config.ts';
import { cacheDir, MAIN_ENTRY, nodeFlagsFor } from '../../src/dev/paths.ts';
import { ensureWorkflowBundle } from '../../src/dev/workflow-bundle.ts';
import { freePort } from '../../src/dev/ports.ts';
import { createDatabaseFromTemplate, dropDatabase, withDatabase } from '../../src/dev/postgres.ts';
import { spawnService, waitFor, type Service } from '../../src/dev/processes.ts';
import { createApiKeysService } from '../../src/modules/auth/api-keys.service.ts';
import { createOrgsService } from '../../src/modules/orgs/orgs.service.ts';
import { domainRecheckScheduleId } from '../../src/temporal/schedules.ts';

export interface HarnessOptions {
  runs: number;
  /** Seconds of each measured load run. */
  durationSec: number;
  /** Seconds of load before the runs. */
  warmupSec: number;
  /** Smaller data sets and shorter runs, for trying the harness itself. */
  quick: boolean;
  /** Where the api writes a CPU profile (node --cpu-prof), or null for none. */
  profileDir: string | null;
  /** Data set sizes from the command line (`--contacts=N` …); a benchmark that reads one has its own default. */
  sizes: BenchSizes;
}

export interface BenchSizes {
  /** `--contacts`: contacts a benchmark imports or seeds. */
  contacts?: number | undefined;
  /** `--step-runs`: automation runs through non-send steps. */
  stepRuns?: number | undefined;
  /** `--waiting-runs`: automation runs waiting at once. */
  waitingRuns?: number | undefined;
  /** `--crash-runs`: automation runs in flight while the worker is killed. */
  crashRuns?: number | undefined;
  /** `--events`: email events a benchmark seeds (`retention`). */
  events?: number | undefined;
}

/**
 * Pauses the daily DNS re-check a worker schedules (`<prefix>-recheck-domains`, at 00:00 UTC): the
 * benchmarks' seeded domains have no DNS, so a run across midnight would see them fail the check
 * and their sends refused.
 */
async function pauseDomainRecheck(env: Record<string, string>): Promise<void> {
  const { TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace, TEMPORAL_TASK_QUEUE_PREFIX: prefix } = env;
  if (!address || !prefix) return;
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection, ...(namespace ? { namespace } : {}) });
    await client.schedule
      .getHandle(domainRecheckScheduleId({ temporal: { schedulePrefix: prefix } }))
      .pause('benchmark: seeded domains have no DNS');
  } finally {
    await connection.close();
  }
}

/** The services every benchmark shares, started once by the harness. */
export interface SharedServices {
  pgServerUrl: string;
  templateDatabase: string;
  redisUrl: string;
  /** The shared Temporal dev server, started on first call. */
  temporal(): Promise<TemporalServer>;
  /** A Temporal dev server of its own for the caller, which must stop it. */
  startTemporal(): Promise<TemporalServer & { stop(): Promise<void> }>;
  encryptionKey: string;
  runId: string;
}

export interface TemporalServer {
  address: string;
  namespace: string;
  pid: number;
}

/** A Herald process: one role, or `all` (api, worker and smtp in one process, as `npm start` runs them). */
export type ProcessKind = 'api' | 'worker' | 'smtp' | 'all';

export interface HeraldProcess {
  kind: ProcessKind;
  pid: number;
  /** http://127.0.0.1:<port> for the api, the port for smtp. */
  url: string;
  port: number;
  stop(): Promise<void>;
}

export interface Workspace {
  orgId: string;
  /** An API key with every public scope and a rate limit far above any load here. */
  key: string;
}

/** The log lines that say a process is ready (all of them). */
const READY_LINES: Record<ProcessKind, string[]> = {
  api: ['"msg":"api listening"'],
  worker: ['"msg":"worker polling"'],
  smtp: ['"msg":"smtp listening"'],
  all: ['"msg":"api listening"', '"msg":"worker polling"', '"msg":"smtp listening"'],
};

/** What a benchmark gets from the harness; everything it starts is stopped after it. */
export class BenchContext {
  readonly options: HarnessOptions;
  readonly services: SharedServices;
  readonly name: string;
  readonly notes: { title: string; text: string }[] = [];
  private readonly cleanups: (() => Promise<void>)[] = [];
  private databases = 0;
  private workspaces = 0;

  /** A directory of this benchmark's own, removed when it ends. */
  readonly scratch: string;
  private readonly needsTemporal: boolean | 'own';
  private ownTemporal: Promise<TemporalServer> | undefined;

  constructor(name: string, options: HarnessOptions, services: SharedServices, needsTemporal: boolean | 'own') {
    this.name = name;
    this.options = options;
    this.services = services;
    this.needsTemporal = needsTemporal;
    this.scratch = mkdtempSync(join(tmpdir(), `herald-bench-${name}-`));
    this.defer(() => Promise.resolve(rmSync(this.scratch, { recursive: true, force: true })));
  }

  freePort(): Promise<number> {
    return freePort();
  }

  log(line: string): void {
    process.stderr.write(`[bench ${this.name}] ${line}\n`);
  }

  /** Text kept with the results (a query plan, a profile summary). */
  note(title: string, text: string): void {
    this.notes.push({ title, text });
  }

  /** Runs `cleanup` when the benchmark ends (last registered, first run). */
  defer(cleanup: () => Promise<void>): void {
    this.cleanups.push(cleanup);
  }

  async close(): Promise<void> {
    for (const cleanup of this.cleanups.splice(0).reverse()) {
      await cleanup().catch((error: unknown) => this.log(`cleanup failed: ${String(error)}`));
    }
  }

  /** A database of its own, cloned from the migrated template; dropped when the benchmark ends. */
  async database(): Promise<string> {
    this.databases += 1;
    const database = `${this.services.templateDatabase.replace(/_template$/, '')}_${this.name.replaceAll('-', '_')}_${this.databases}`;
    await createDatabaseFromTemplate(this.services.pgServerUrl, database, this.services.templateDatabase);
    this.defer(() => dropDatabase(this.services.pgServerUrl, database));
    return withDatabase(this.services.pgServerUrl, database);
  }

  /**
   * A workspace with an all-scopes key whose rate limit never throttles (the limiter still runs):
   * a test key (webhook benchmarks register http endpoints), or `live` where mail must reach the
   * benchmark's relay (a test key's mail stays in the sandbox).
   */
  async workspace(databaseUrl: string, options: { mode?: 'live' | 'test' } = {}): Promise<Workspace> {
    const orm = await createOrm({ databaseUrl, poolMax: 1 });
    this.workspaces += 1;
    try {
      const { org } = await createOrgsService({ orm }).createOrganization({ name: `Bench ${this.name} ${this.workspaces}` });
      const { key } = await createApiKeysService({ orm }).createApiKey({
        orgId: org.id,
        scopes: ['all'],
        mode: options.mode ?? 'test',
        rateLimitPerMinute: 1_000_000_000,
        burst: 100_000_000,
      });
      return { orgId: org.id, key };
    } finally {
      await orm.close();
    }
  }

  /**
   * The environment of a Herald process on `databaseUrl`: Redis keys under a prefix of this
   * benchmark, task queues of its own, the harness's encryption key, DNS checks off, and the
   * shared Temporal dev server when the benchmark needs Temporal.
   */
  async env(databaseUrl: string, overrides: Record<string, string> = {}): Promise<Record<string, string>> {
    const tag = `${this.services.runId}${this.name.replaceAll('-', '')}`;
    const temporal = this.needsTemporal ? await this.temporal() : undefined;
    return {
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      DATABASE_URL: databaseUrl,
      DATABASE_POOL_MAX: '10',
      REDIS_URL: this.services.redisUrl,
      REDIS_KEY_PREFIX: `herald-bench:${tag}:`,
      TEMPORAL_TASK_QUEUE_PREFIX: `bench${tag}`,
      ...(temporal ? { TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: temporal.namespace } : {}),
      HOST: '127.0.0.1',
      SMTP_HOST: '127.0.0.1',
      HERALD_ENCRYPTION_KEY: this.services.encryptionKey,
      CONTACT_DNS_CHECK: 'false',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      // Several herald processes share this host: none serves metrics.
      METRICS_PORT: '0',
      ...overrides,
    };
  }

  /** The Temporal dev server of this benchmark: the shared one, or its own (see Benchmark.needsTemporal). */
  temporal(): Promise<TemporalServer> {
    if (this.needsTemporal !== 'own') return this.services.temporal();
    this.ownTemporal ??= this.services.startTemporal().then((server) => {
      this.defer(() => server.stop());
      return server;
    });
    return this.ownTemporal;
  }

  /**
   * Starts `herald <kind>` as a child process on free ports and waits for its ready line.
   * With `profile`, the process writes a CPU profile when the harness runs with --profile.
   */
  async start(
    kind: ProcessKind,
    env: Record<string, string>,
    options: { profile?: boolean; onLine?: (line: string) => void } = {},
  ): Promise<HeraldProcess> {
    const port = await freePort();
    const nodeFlags: string[] = nodeFlagsFor(kind, env);
    if (options.profile && this.options.profileDir) {
      const dir = join(this.options.profileDir, `${this.name}-${kind}`);
      mkdirSync(dir, { recursive: true });
      nodeFlags.push('--cpu-prof', '--cpu-prof-dir', dir);
    }
    // As `npm start` runs it (src/dev/dev-setup.ts): the worker on a bundle built once, not webpack at start.
    const bundle = kind === 'worker' || kind === 'all' ? await this.workflowBundle(env) : {};
    const waitingFor = new Set(READY_LINES[kind]);
    const recent: string[] = [];
    // `all` serves HTTP on `port` and SMTP on a second one (submission off, as for `smtp`).
    const smtpPort = kind === 'all' ? await freePort() : port;
    const service: Service = spawnService({
      name: kind,
      command: process.execPath,
      args: [...nodeFlags, MAIN_ENTRY, kind],
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...bundle,
        ...env,
        ...(kind === 'api' || kind === 'all' ? { PORT: String(port) } : {}),
        ...(kind === 'smtp' || kind === 'all'
          ? { SMTP_PORT: String(smtpPort), SMTP_SUBMISSION_PORT: env.SMTP_SUBMISSION_PORT ?? '0' }
          : {}),
      },
      onLine: (line) => {
        for (const ready of waitingFor) if (line.includes(ready)) waitingFor.delete(ready);
        options.onLine?.(line);
        recent.push(line);
        if (recent.length > 20) recent.shift();
        if (/"level":"(warn|error)"/.test(line) || !line.startsWith('{')) this.log(`[${kind}] ${line.slice(0, 400)}`);
      },
    });
    const stop = () => service.stop(20_000);
    this.defer(stop);
    const exited = service.exited.then((code) => {
      throw new Error(`herald ${kind} exited with ${code} while starting:\n${recent.join('\n')}`);
    });
    await Promise.race([
      exited,
      waitFor(`herald ${kind} to be ready`, () => Promise.resolve(waitingFor.size === 0 ? true : undefined), 180_000, 100),
    ]);
    exited.catch(() => {});
    if (kind === 'worker' || kind === 'all') await pauseDomainRecheck(env);
    return { kind, pid: service.child.pid!, url: `http://127.0.0.1:${port}`, port, stop };
  }

  /** HERALD_WORKFLOW_BUNDLE for a worker: a bundle of the current workflow sources, kept in the Herald cache directory between runs. */
  private async workflowBundle(env: Record<string, string>): Promise<Record<string, string>> {
    if (env.HERALD_WORKFLOW_BUNDLE) return {};
    const dir = join(cacheDir(loadDevEnv()), 'workflow-bundles');
    return { HERALD_WORKFLOW_BUNDLE: await ensureWorkflowBundle(dir, (message) => this.log(message)) };
  }

  /** Runs a helper script (`node <args>`) as a child process until it prints `readyText`. */
  async spawnNode(name: string, args: string[], readyText: string): Promise<{ pid: number; stop(): Promise<void> }> {
    let ready = false;
    const service = spawnService({
      name,
      command: process.execPath,
      args,
      onLine: (line) => {
        if (line.includes(readyText)) ready = true;
        else this.log(`[${name}] ${line.slice(0, 400)}`);
      },
    });
    const stop = () => service.stop(10_000);
    this.defer(stop);
    const exited = service.exited.then((code) => {
      throw new Error(`${name} exited with ${code} while starting`);
    });
    await Promise.race([exited, waitFor(name, () => Promise.resolve(ready ? true : undefined), 60_000, 50)]);
    exited.catch(() => {});
    return { pid: service.child.pid!, stop };
  }
}

/** A 32-byte key, base64: seals webhook secrets and list cursors in every process of a run. */
export function newEncryptionKey(): string {
  return randomBytes(32).toString('base64');
}
