import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { createOrm } from '../db/orm.ts';
import { migrateUp } from '../db/migrate.ts';
import { loadDevEnv } from '../src/config.ts';
import { cacheDir } from '../src/dev/paths.ts';
import { freePort } from '../src/dev/ports.ts';
import { dropDatabase, ensureDatabase, resolvePostgres, withAdminClient, withDatabase } from '../src/dev/postgres.ts';
import { isAlive } from '../src/dev/processes.ts';
import { resolveRedis } from '../src/dev/redis.ts';
import { resolveSeaweedfsBinary } from '../src/dev/seaweedfs-binary.ts';
import { startSeaweedfs } from '../src/dev/seaweedfs-server.ts';
import { resolveTemporalBinary } from '../src/dev/temporal-binary.ts';
import { startTemporalDevServer } from '../src/dev/temporal-server.ts';
import { startDnsServer } from './support/dns-server.ts';
import { s3Answers } from './support/s3.ts';

/**
 * Test databases are named `herald_test_<pid of the run>_<suffix>`, so concurrent runs (two
 * clones, or CI beside a developer) never touch each other's databases, and leftovers of a
 * crashed run are recognised by their dead pid and dropped.
 */
export const TEST_DATABASE_PREFIX = 'herald_test_';
export const TEST_NAMESPACE = 'herald-test';

declare module 'vitest' {
  export interface ProvidedContext {
    pgServerUrl: string;
    templateDatabase: string;
    testRunId: string;
    redisUrl: string;
    temporalAddress: string;
    temporalNamespace: string;
    temporalBin: string;
    dnsServer: string;
    /** The run's S3 server (SeaweedFS) and its one identity; each test file makes its own bucket (test/support/s3.ts). */
    s3Endpoint: string;
    s3AccessKeyId: string;
    s3SecretAccessKey: string;
  }
}

const log = (line: string) => process.stdout.write(`[test setup] ${line}\n`);

/**
 * Once per test run: a migrated template database (each test file clones its own from it),
 * Redis, a headless in-memory Temporal dev server on a free port with its own namespace, and an
 * S3 server (SeaweedFS, started beside Temporal) with a temporary data directory.
 * Dev data (.data/, the `herald` database, port 7233) is never touched.
 */
export default async function setup(project: TestProject) {
  const env = loadDevEnv();
  const scratch = mkdtempSync(join(tmpdir(), 'herald-test-'));
  const postgres = await resolvePostgres({ databaseUrl: env.DATABASE_URL, dataDir: scratch, persistent: false, log });
  const existing = await withAdminClient(postgres.serverUrl, (client) =>
    client.query<{ datname: string }>('select datname from pg_database where datname like $1', [`${TEST_DATABASE_PREFIX}%`]),
  );
  for (const { datname } of existing.rows) {
    const pid = Number(/^herald_test_(\d+)_/.exec(datname)?.[1]);
    if (!pid || !isAlive(pid)) await dropDatabase(postgres.serverUrl, datname);
  }
  const runId = String(process.pid);
  const templateDatabase = `${TEST_DATABASE_PREFIX}${runId}_template`;
  const templateUrl = withDatabase(postgres.serverUrl, templateDatabase);
  await ensureDatabase(templateUrl);
  const orm = await createOrm({ databaseUrl: templateUrl, poolMax: 1 });
  await migrateUp(orm);
  await orm.close();

  const redis = await resolveRedis({ redisUrl: env.REDIS_URL, dataDir: scratch, path: env.PATH, log });
  const temporalBin = resolveTemporalBinary({ explicit: env.TEMPORAL_BIN, cacheDir: cacheDir(env), path: env.PATH, log });
  const seaweedfsBin = resolveSeaweedfsBinary({ explicit: env.SEAWEEDFS_BIN, cacheDir: cacheDir(env), path: env.PATH, log });
  // Both start at once (each takes seconds); when one fails the other is stopped before the error.
  const [temporalStart, s3Start] = await Promise.allSettled([
    startTemporalDevServer({
      binary: temporalBin,
      port: await freePort(),
      uiPort: null,
      dbFile: null,
      namespace: TEST_NAMESPACE,
      logFile: join(scratch, 'temporal.log'),
    }),
    startSeaweedfs({
      binary: seaweedfsBin,
      dataDir: join(scratch, 'seaweedfs'),
      logFile: join(scratch, 'seaweedfs.log'),
      ready: s3Answers,
    }),
  ]);
  if (temporalStart.status === 'rejected' || s3Start.status === 'rejected') {
    if (temporalStart.status === 'fulfilled') await temporalStart.value.stop();
    if (s3Start.status === 'fulfilled') await s3Start.value.stop();
    throw temporalStart.status === 'rejected' ? temporalStart.reason : (s3Start as PromiseRejectedResult).reason;
  }
  const temporal = temporalStart.value;
  const s3 = s3Start.value;
  log(`S3 (SeaweedFS) at ${s3.endpoint}`);

  // The internet's DNS, for every test file: the usual example domains receive mail.
  const mail = { MX: [{ exchange: 'mx.example.net', priority: 10 }] };
  const dns = await startDnsServer({
    'example.com': mail,
    '*.example.com': mail,
    'example.org': mail,
    'example.net': mail,
    'mx.example.net': { A: ['192.0.2.25'] },
  });
  project.provide('dnsServer', dns.address);
  project.provide('pgServerUrl', postgres.serverUrl);
  project.provide('templateDatabase', templateDatabase);
  project.provide('testRunId', runId);
  project.provide('redisUrl', redis.url);
  project.provide('temporalAddress', temporal.address);
  project.provide('temporalNamespace', TEST_NAMESPACE);
  project.provide('temporalBin', temporalBin);
  project.provide('s3Endpoint', s3.endpoint);
  project.provide('s3AccessKeyId', s3.accessKeyId);
  project.provide('s3SecretAccessKey', s3.secretAccessKey);

  return async () => {
    await dns.close();
    await Promise.all([temporal.stop(), s3.stop()]);
    await dropDatabase(postgres.serverUrl, templateDatabase).catch(() => {});
    await redis.service?.stop();
    await postgres.stop();
    rmSync(scratch, { recursive: true, force: true });
  };
}
