import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { createOrm, type MikroORM } from '../../db/orm.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { createDatabaseFromTemplate, dropDatabase, withDatabase } from '../../src/dev/postgres.ts';

/** Values every test file shares: the run's PostgreSQL server, Redis and Temporal server. */
export function sharedServices() {
  return {
    pgServerUrl: inject('pgServerUrl'),
    templateDatabase: inject('templateDatabase'),
    testRunId: inject('testRunId'),
    redisUrl: inject('redisUrl'),
    temporalAddress: inject('temporalAddress'),
    temporalNamespace: inject('temporalNamespace'),
    temporalBin: inject('temporalBin'),
    dnsServer: inject('dnsServer'),
  };
}

/** A database name the global setup recognises as this run's (see test/global-setup.ts). */
export function testDatabaseName(runId: string, suffix: string): string {
  return `herald_test_${runId}_${suffix}`;
}

export interface TestStack {
  /** Unique per test file: database name suffix, Redis prefix, task-queue prefix. */
  id: string;
  databaseUrl: string;
  config: Config;
  /** The environment that produces `config`, for child processes. */
  env: Record<string, string>;
  orm: MikroORM;
  close(): Promise<void>;
}

export const TEST_ENCRYPTION_KEY = randomBytes(32).toString('base64');

/**
 * A per-file slice of the shared services: its own database cloned from the migrated
 * template, its own Redis key prefix and its own Temporal task queues and schedule ids.
 */
export async function createTestStack(overrides: Record<string, string> = {}): Promise<TestStack> {
  const services = sharedServices();
  const id = randomBytes(4).toString('hex');
  const database = testDatabaseName(services.testRunId, id);
  await createDatabaseFromTemplate(services.pgServerUrl, database, services.templateDatabase);
  const databaseUrl = withDatabase(services.pgServerUrl, database);
  const env: Record<string, string> = {
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    DATABASE_URL: databaseUrl,
    DATABASE_POOL_MAX: '5',
    REDIS_URL: services.redisUrl,
    REDIS_KEY_PREFIX: `herald-test:${id}:`,
    TEMPORAL_ADDRESS: services.temporalAddress,
    TEMPORAL_NAMESPACE: services.temporalNamespace,
    TEMPORAL_TASK_QUEUE_PREFIX: `t${id}`,
    PORT: '0',
    HOST: '127.0.0.1',
    PUBLIC_URL: 'http://herald.test',
    SMTP_PORT: '0',
    SMTP_HOST: '127.0.0.1',
    SMTP_SUBMISSION_PORT: '0',
    HERALD_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    // Direct delivery's fake MX hosts listen on 127.0.0.x.
    SMTP_DIRECT_ALLOW_PRIVATE_TARGETS: 'true',
    // Several herald processes share this host: none serves metrics unless a test asks.
    METRICS_PORT: '0',
    DNS_SERVERS: services.dnsServer,
    DNS_TIMEOUT_MS: '500',
    ...overrides,
  };
  const config = loadConfig(env);
  const orm = await createOrm({ databaseUrl, poolMax: 5 });
  return {
    id,
    databaseUrl,
    config,
    env,
    orm,
    async close() {
      await orm.close();
      await dropDatabase(services.pgServerUrl, database);
    },
  };
}
