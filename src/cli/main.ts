import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig, loadDevEnv } from '../config.ts';
import { createLogger } from '../logger.ts';
import { onShutdown } from '../shutdown.ts';
import { dataDir } from '../dev/paths.ts';
import { StartRefused } from './start-process.ts';

// Each command imports what it runs, when it runs it: the api and smtp processes never load the
// Temporal worker, the worker never loads Koa (src/cli/start-process.ts).

const USAGE = `usage: herald <command>

processes (production entry points, configured by environment variables):
  herald api                 HTTP API
  herald worker              Temporal worker (task queue herald-main)
  herald smtp                inbound SMTP (MX) listener
  herald all                 api, worker and smtp in one process (small installs; herald dev hosts the same)
  herald migrate             apply pending database migrations
  herald bundle-workflows    bundle workflow code ahead of time (.build/workflow-bundle.js)

development:
  herald dev                 the whole stack on this machine (npm start)
  herald test [args]         typecheck, lint and the test suite (npm test)
  herald migration:create    write a migration for entity changes
  herald mail-sink [--help]  the dev mail sink and mailbox simulator alone (SMTP 2526, viewer 8025)
  herald bench [names]       the benchmarks (npm run bench; see BENCHMARKS.md)

operators:
  herald admin ...           workspaces, keys, domains, senders, automations, templates, credits
`;

/** In development, operator commands talk to the stack `herald dev` started (.data/dev.env). */
function loadDevStackEnv(): void {
  if (process.env.NODE_ENV === 'production') return;
  const file = join(dataDir(loadDevEnv()), 'dev.env');
  if (existsSync(file)) process.loadEnvFile(file);
}

async function runProcess(name: 'api' | 'worker' | 'smtp' | 'all'): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, { service: `herald-${name}` });
  // API_PROCESSES > 1: this process supervises that many api processes sharing the port.
  const clusterRole =
    name === 'api' && config.http.processes > 1 ? ((await import('node:cluster')).default.isPrimary ? 'primary' : 'worker') : null;
  const { checkEncryptionKeyAtStart, startHerald } = await import('./start-process.ts');
  if (clusterRole !== 'worker') await checkEncryptionKeyAtStart(config, logger);
  if (clusterRole === 'primary') return (await import('../http/api-cluster.ts')).runApiCluster(config, logger);
  const running = await startHerald(name, config, logger, { clusterWorker: clusterRole === 'worker' });
  onShutdown(logger, running.stop);
  if (running.done) await running.done;
}

async function migrate(): Promise<void> {
  loadDevStackEnv();
  const config = loadConfig();
  if (config.env !== 'production') {
    const { ensureDatabase } = await import('../dev/postgres.ts');
    await ensureDatabase(config.database.url);
  }
  const { createOrm } = await import('../../db/orm.ts');
  const { migrateUp } = await import('../../db/migrate.ts');
  const orm = await createOrm({ databaseUrl: config.database.url });
  try {
    const applied = await migrateUp(orm);
    process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
  } finally {
    await orm.close();
  }
}

async function createMigration(): Promise<void> {
  loadDevStackEnv();
  const config = loadConfig();
  const { createOrm } = await import('../../db/orm.ts');
  const orm = await createOrm({ databaseUrl: config.database.url });
  try {
    const result = await orm.migrator.create();
    process.stdout.write(result.fileName ? `created ${result.fileName}\n` : 'no changes\n');
  } finally {
    await orm.close();
  }
}

async function bundleWorkflows(): Promise<void> {
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const { WORKFLOW_BUNDLE_PATH, WORKFLOWS_PATH } = await import('../worker.ts');
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH });
  mkdirSync(dirname(WORKFLOW_BUNDLE_PATH), { recursive: true });
  writeFileSync(WORKFLOW_BUNDLE_PATH, code);
  process.stdout.write(`wrote ${WORKFLOW_BUNDLE_PATH} (${Math.round(code.length / 1024)} KiB)\n`);
}

async function admin(args: string[]): Promise<void> {
  loadDevStackEnv();
  const { runAdmin } = await import('./admin.ts');
  const { createOrm } = await import('../../db/orm.ts');
  const result = await runAdmin(args, async () => {
    const config = loadConfig();
    const orm = await createOrm({ databaseUrl: config.database.url, poolMax: 2 });
    return { orm, config };
  });
  process.stdout.write(result.stdout);
  process.stderr.write(result.stderr);
  process.exitCode = result.exitCode;
}

/** The benchmark harness (bench/run.ts) in a child process on this Node, with its own arguments. */
function runBench(args: string[]): Promise<number> {
  const script = fileURLToPath(new URL('../../bench/run.ts', import.meta.url));
  const child = spawn(process.execPath, [script, ...args], { stdio: 'inherit' });
  return new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'api':
    case 'worker':
    case 'smtp':
    case 'all':
      return runProcess(command);
    case 'migrate':
      return migrate();
    case 'migration:create':
      return createMigration();
    case 'bundle-workflows':
      return bundleWorkflows();
    case 'dev':
      return (await import('../dev/dev.ts')).runDev();
    case 'dev-setup': {
      const config = loadConfig();
      if (!config.encryptionKey) throw new ConfigError(['HERALD_ENCRYPTION_KEY: required by dev-setup']);
      return (await import('../dev/dev-setup.ts')).runDevSetup({
        databaseUrl: config.database.url,
        temporal: config.temporal,
        namespace: config.temporal.namespace,
        encryptionKey: config.encryptionKey.toString('base64'),
        dataDir: dataDir(loadDevEnv()),
      });
    }
    case 'mail-sink':
      return (await import('../dev/mail-sink-cli.ts')).runMailSink(rest);
    case 'test':
      process.exitCode = await (await import('../dev/test-runner.ts')).runTests(rest);
      return;
    case 'bench':
      process.exitCode = await runBench(rest);
      return;
    case 'admin':
      if (rest.length === 0 || rest[0] === '--help') {
        process.stdout.write((await import('./admin.ts')).adminUsage() + '\n');
        return;
      }
      return admin(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return;
    default:
      process.stderr.write(`herald: unknown command "${command}"\n\n${USAGE}`);
      process.exitCode = 2;
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`herald: ${error.message}\n`);
    process.exit(2);
  }
  if (error instanceof StartRefused) {
    process.stderr.write(`herald: ${error.message}\n`);
    process.exit(1);
  }
  const failure = error as NodeJS.ErrnoException & { address?: string; port?: number };
  if (failure.code === 'EADDRINUSE') {
    process.stderr.write(
      `herald: cannot start: ${failure.address ?? ''}:${failure.port ?? ''} is already in use (another Herald, or another program, listens there); stop it or choose another port (PORT, SMTP_PORT, SMTP_SUBMISSION_PORT, METRICS_PORT)\n`,
    );
    process.exit(1);
  }
  if (failure.name === 'TransportError') {
    process.stderr.write(
      `herald: cannot start: Temporal at TEMPORAL_ADDRESS cannot be reached (${failure.message}); is the Temporal server running, and is TEMPORAL_ADDRESS right?\n`,
    );
    process.exit(1);
  }
  process.stderr.write(`herald: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
