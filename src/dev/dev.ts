import { join, relative } from 'node:path';
import { loadConfig, loadDevEnv } from '../config.ts';
import { ensureDevEncryptionKey, updateEnvFile } from './dev-env-file.ts';
import { cacheDir, dataDir, MAIN_ENTRY, nodeFlagsFor } from './paths.ts';
import { ensureDatabase, resolvePostgres, withDatabase } from './postgres.ts';
import { spawnService, waitFor, type Service } from './processes.ts';
import { freePort, isListening } from './ports.ts';
import { resolveRedis } from './redis.ts';
import type { DevSetupResult } from './dev-setup.ts';
import { resolveTemporalBinary } from './temporal-binary.ts';
import { startTemporalDevServer } from './temporal-server.ts';
import { createDnsResolver } from '../dns/resolver.ts';
import { createLogger } from '../logger.ts';
import { startDevRelay } from './dev-mail-sink.ts';
import { describeRelayTls, resolveRelayTls } from '../smtp/tls-policy.ts';

const NAMESPACE = 'default';

const say = (line: string) => process.stdout.write(`[herald] ${line}\n`);

/**
 * `herald dev` (npm start): PostgreSQL, Redis and the Temporal dev server (Web UI on, state
 * under .data/) when none is configured, migrations, the dev workspace, the mail sink as the
 * outbound relay (unless SMTP_RELAY_URL names another), then api + worker + smtp in this
 * process (HERALD_DEV_SPLIT: as child processes), and a banner. Ctrl-C stops everything in
 * reverse order; a crash of any part stops the rest, exit code 1.
 */
export async function runDev(): Promise<void> {
  const env = loadDevEnv();
  const data = dataDir(env);
  const { PORT: API_PORT, SMTP_PORT, TEMPORAL_PORT, TEMPORAL_UI_PORT, MAIL_SINK_HTTP_PORT } = env;
  const submissionPort = (await isListening('127.0.0.1', env.SMTP_SUBMISSION_PORT)) ? await freePort() : env.SMTP_SUBMISSION_PORT;
  const stack: { name: string; stop: () => Promise<void> }[] = [];
  let stopping = false;
  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say('stopping...');
    for (const item of stack.reverse()) {
      await item.stop().catch((error: unknown) => say(`${item.name} did not stop cleanly: ${String(error)}`));
    }
    say('stopped');
    process.exit(code);
  };
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));
  process.on('SIGHUP', () => void stopAll(0));
  // Herald runs in this process: an error nothing caught stops the stack (the databases and
  // servers it started included) as a crashed child process did, with exit code 1.
  const crashed = (error: unknown) => {
    say(`crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    void stopAll(1);
  };
  process.on('uncaughtException', crashed);
  process.on('unhandledRejection', crashed);

  try {
    const envFile = join(data, 'dev.env');
    const encryptionKey = ensureDevEncryptionKey(envFile);

    const postgres = await resolvePostgres({ databaseUrl: env.DATABASE_URL, dataDir: data, persistent: true, log: say });
    stack.push({ name: 'postgres', stop: () => postgres.stop() });
    const databaseUrl = env.DATABASE_URL ?? withDatabase(postgres.serverUrl, 'herald');
    await ensureDatabase(databaseUrl);

    const redis = await resolveRedis({ redisUrl: env.REDIS_URL, dataDir: data, path: env.PATH, log: say });
    if (redis.service) stack.push({ name: 'redis', stop: () => redis.service!.stop() });

    let temporalAddress = env.TEMPORAL_ADDRESS;
    let temporalUi: string | null = null;
    if (temporalAddress) {
      // dev-setup (below) waits for it and registers the search attributes.
    } else if (await isListening('127.0.0.1', TEMPORAL_PORT)) {
      throw new Error(`port ${TEMPORAL_PORT} is taken: stop what runs there, or set TEMPORAL_ADDRESS to use that Temporal server`);
    } else {
      const binary = resolveTemporalBinary({ explicit: env.TEMPORAL_BIN, cacheDir: cacheDir(env), path: env.PATH, log: say });
      say('starting the Temporal dev server...');
      const temporal = await startTemporalDevServer({
        binary,
        port: TEMPORAL_PORT,
        uiPort: TEMPORAL_UI_PORT,
        namespace: NAMESPACE,
        dbFile: join(data, 'temporal', 'dev.sqlite'),
        logFile: join(data, 'temporal', 'server.log'),
        readiness: 'port',
      });
      stack.push({ name: 'temporal', stop: () => temporal.stop() });
      temporalAddress = temporal.address;
      temporalUi = temporal.uiUrl;
    }

    // Namespace and search attributes, migrations, the dev workspace and the workflow bundle,
    // in a child process: the supervisor stays small (no ORM, Temporal client or webpack).
    const setup = await runSetupChild({
      ...process.env,
      NODE_ENV: 'development',
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_NAMESPACE: NAMESPACE,
      HERALD_ENCRYPTION_KEY: encryptionKey,
    });
    if (setup.applied.length > 0) say(`applied migrations: ${setup.applied.join(', ')}`);
    const { workspace } = setup;

    const dnsOnline = await systemDnsWorks();
    if (!dnsOnline) say("the machine's DNS resolves nothing (offline?): contact mail-server checks are off (CONTACT_DNS_CHECK=false)");
    const relay = await startDevRelay({
      relayUrl: env.SMTP_RELAY_URL,
      httpPort: MAIL_SINK_HTTP_PORT,
      dataDir: data,
      inboundSmtpPort: SMTP_PORT,
      logger: createLogger('info', { service: 'herald-mail-sink' }, (line) => process.stdout.write(`[mail-sink] ${line}\n`)),
    });
    const relayTls = resolveRelayTls({
      url: relay.relayUrl,
      policy: env.SMTP_RELAY_TLS || undefined,
      caFile: env.SMTP_RELAY_CA_FILE || undefined,
    });
    if (typeof relayTls === 'string') throw new Error(relayTls);
    if (relay.sink) {
      const sink = relay.sink;
      stack.push({ name: 'mail-sink', stop: () => sink.close() });
    }
    const publicUrl = `http://127.0.0.1:${API_PORT}`;
    updateEnvFile(envFile, { DATABASE_URL: databaseUrl, REDIS_URL: redis.url, TEMPORAL_ADDRESS: temporalAddress, PUBLIC_URL: publicUrl });
    const childEnv: NodeJS.ProcessEnv = {
      // glibc gives each thread that allocates an arena of its own (up to 8 per core): the
      // all-in-one process's threads (libuv, V8, Temporal's runtime, the workflow thread) held
      // ~60 MB of them, mostly free. Two arenas keep that resident memory down (unless set);
      // for this process src/cli/herald.mjs sets it (glibc reads it at start only).
      MALLOC_ARENA_MAX: '2',
      // The sink is the final hop: accepted there means delivered (unless the user says otherwise).
      ...(relay.sink ? { SMTP_RELAY_FINAL_HOP: 'true' } : {}),
      // Test keys' mail (the dev key is one) goes to the sink too, so it shows in the viewer; never to a real relay.
      ...(relay.sink ? { SANDBOX_RELAY_URL: relay.relayUrl } : {}),
      ...process.env,
      SMTP_RELAY_URL: relay.relayUrl,
      NODE_ENV: 'development',
      DATABASE_URL: databaseUrl,
      REDIS_URL: redis.url,
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_NAMESPACE: NAMESPACE,
      PORT: String(API_PORT),
      HOST: '127.0.0.1',
      PUBLIC_URL: publicUrl,
      METRICS_HOST: '127.0.0.1',
      SMTP_PORT: String(SMTP_PORT),
      SMTP_HOST: '127.0.0.1',
      SMTP_SUBMISSION_PORT: String(submissionPort),
      BLOB_DIR: join(data, 'blobs'),
      HERALD_ENCRYPTION_KEY: encryptionKey,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      SMTP_DIRECT_ALLOW_PRIVATE_TARGETS: 'true',
      HERALD_WORKFLOW_BUNDLE: setup.workflowBundle,
      ...(temporalUi ? { TEMPORAL_UI_URL: temporalUi } : {}),
      ...(dnsOnline ? {} : { CONTACT_DNS_CHECK: 'false' }),
    };
    let markWorkerReady = () => {};
    const workerReady = new Promise<void>((resolve) => (markWorkerReady = resolve));
    const onLine = (name: string) => (line: string) => {
      process.stdout.write(`[${name}] ${line}\n`);
      if ((name === 'worker' || name === 'all') && line.includes('"msg":"worker polling"')) markWorkerReady();
    };
    const failed = (name: string, how: string) => {
      if (stopping) return;
      say(`${name} ${how}; stopping the stack`);
      void stopAll(1);
    };
    const start = (name: string): Service => {
      const service = spawnService({
        name,
        command: process.execPath,
        args: [...nodeFlagsFor(name, childEnv), MAIN_ENTRY, name],
        // Split, each process serves its metrics on a port of its own (worker, then api, then smtp).
        env: { ...childEnv, METRICS_PORT: String(env.METRICS_PORT + Math.max(0, ['worker', 'api', 'smtp'].indexOf(name))) },
        onLine: onLine(name),
      });
      stack.push({ name, stop: () => service.stop() });
      void service.exited.then((code) => failed(name, `exited unexpectedly (code ${code})`));
      return service;
    };
    // api, worker and smtp in this process (one Node process for the whole stack: each one
    // carries ~80 MB of its own, BENCHMARKS.md footprint-start); HERALD_DEV_SPLIT=true runs them
    // as the separate processes production scales out with.
    if (env.HERALD_DEV_SPLIT) {
      start('worker');
      start('api');
      start('smtp');
    } else {
      for (const [key, value] of Object.entries(childEnv)) if (value !== undefined) process.env[key] = value;
      process.env.METRICS_PORT = String(env.METRICS_PORT);
      const herald = await hostHerald(onLine('all'));
      stack.push({ name: 'all', stop: herald.stop });
      void herald.done?.then(
        () => failed('the worker', 'stopped unexpectedly'),
        (error: unknown) => failed('the worker', `failed (${error instanceof Error ? error.message : String(error)})`),
      );
    }
    await waitFor('the api', async () => ((await fetch(`${publicUrl}/healthz`)).ok ? true : undefined), 60_000);
    await Promise.race([
      workerReady,
      new Promise((_, reject) => setTimeout(() => reject(new Error('timed out waiting for the worker')), 120_000).unref()),
    ]);
    await waitFor('the smtp listener', async () => ((await isListening('127.0.0.1', SMTP_PORT)) ? true : undefined), 60_000);

    printBanner({
      dataDir: data.startsWith(process.cwd() + '/') ? relative(process.cwd(), data) + '/' : data,
      smtpPort: SMTP_PORT,
      submissionPort,
      relayLines: [
        ...relay.bannerLines,
        `  Relay TLS     ${describeRelayTls(relayTls)}`,
        `  Test keys     their mail stays in the sandbox (${relay.sink ? 'shown in the mail sink' : "the worker's mailbox simulator"}); live keys deliver`,
      ],
      publicUrl,
      temporalUi,
      temporalAddress,
      key: workspace.key,
      dashboardSignIn: setup.dashboardSignIn,
      orgId: workspace.orgId,
      domain: workspace.domain,
      databaseUrl,
      redisUrl: redis.url,
      metricsUrl: `http://127.0.0.1:${env.METRICS_PORT}/metrics`,
    });
  } catch (error) {
    say(`failed: ${error instanceof Error ? error.message : String(error)}`);
    await stopAll(1);
  }
}

/** How long Herald, hosted in this process, gets to stop gracefully (as a child process got before SIGKILL). */
const HERALD_STOP_MS = 10_000;

/**
 * `herald all` in this process, configured by process.env (the stack's settings), its log lines
 * given to `onLine` (prefixed `[all]` as a child's were). Its stop is bounded by HERALD_STOP_MS:
 * what is still running then ends with this process.
 */
async function hostHerald(onLine: (line: string) => void): Promise<{ stop: () => Promise<void>; done: Promise<void> | null }> {
  const { checkEncryptionKeyAtStart, startHerald } = await import('../cli/start-process.ts');
  const config = loadConfig();
  const logger = createLogger(config.logLevel, { service: 'herald-all' }, onLine);
  await checkEncryptionKeyAtStart(config, logger);
  const herald = await startHerald('all', config, logger);
  return {
    done: herald.done,
    stop: async () => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, HERALD_STOP_MS)));
      const stopped = herald.stop().then(() => true);
      const inTime = await Promise.race([stopped, late.then(() => false)]);
      clearTimeout(timer);
      if (!inTime) say(`herald all did not stop within ${HERALD_STOP_MS / 1000} s; it ends with this process`);
    },
  };
}

/** Runs `herald dev-setup` and returns what it printed last (one JSON line); its other lines are echoed. */
async function runSetupChild(env: NodeJS.ProcessEnv): Promise<DevSetupResult> {
  let last = '';
  const child = spawnService({
    name: 'setup',
    command: process.execPath,
    args: [MAIN_ENTRY, 'dev-setup'],
    env,
    onLine: (line) => {
      if (line.startsWith('{')) last = line;
      else process.stdout.write(`[setup] ${line}\n`);
    },
  });
  const code = await child.exited;
  if (code !== 0 || !last) throw new Error(`dev setup failed (exit code ${code})`);
  return JSON.parse(last) as DevSetupResult;
}

/**
 * Whether the system resolver knows a domain that certainly receives mail. Without it every
 * contact would fail the mail-server check, so the dev stack turns that check off.
 */
async function systemDnsWorks(): Promise<boolean> {
  const resolver = createDnsResolver({ dns: { servers: [], timeoutMs: 2000 } });
  return (await resolver.mailServer('gmail.com')) !== 'no';
}

function printBanner(info: {
  dataDir: string;
  smtpPort: number;
  submissionPort: number;
  relayLines: string[];
  publicUrl: string;
  temporalUi: string | null;
  temporalAddress: string;
  key: string;
  dashboardSignIn: string;
  orgId: string;
  domain: string;
  databaseUrl: string;
  redisUrl: string;
  metricsUrl: string;
}): void {
  const db = new URL(info.databaseUrl);
  if (db.password) db.password = '***';
  const lines = [
    '',
    '  Herald is running',
    '',
    `  Dashboard     ${info.publicUrl}/dashboard/sign-in/${info.dashboardSignIn}`,
    "                (signs you in as the dev workspace's owner: one use, 15 minutes;",
    `                 another: npx herald admin sign-in-link --org ${info.orgId})`,
    `  API           ${info.publicUrl}/api/v1`,
    `  Docs          ${info.publicUrl}/docs`,
    `  Temporal UI   ${info.temporalUi ?? `(external Temporal at ${info.temporalAddress})`}`,
    `                workspace filter: HeraldOrgId="${info.orgId}"`,
    `  Inbound SMTP  127.0.0.1:${info.smtpPort} (domain ${info.domain})`,
    `  SMTP submit   127.0.0.1:${info.submissionPort} (AUTH PLAIN/LOGIN: user herald, password the API key)`,
    ...info.relayLines,
    `  PostgreSQL    ${db.toString()}`,
    `  Redis         ${info.redisUrl}`,
    `  Metrics       ${info.metricsUrl}`,
    `  Dev API key   ${info.key}`,
    '',
    '  Try it:',
    `    curl -s -H "Authorization: Bearer ${info.key}" ${info.publicUrl}/api/v1/me`,
    '',
    '  Operator CLI: npx herald admin org list',
    `  Ctrl-C stops everything; data stays in ${info.dataDir} for the next start.`,
    '',
  ];
  process.stdout.write(lines.join('\n') + '\n');
}
