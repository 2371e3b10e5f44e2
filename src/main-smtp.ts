import { createOrm, type MikroORM } from '../db/orm.ts';
import { createDatabaseOutage, type DatabaseOutage } from './db/outage.ts';
import type { BlobStore } from './blob/blob-store.ts';
import { openBlobStore } from './blob/open-blob-store.ts';
import type { Config } from './config.ts';
import type { Logger } from './logger.ts';
import { createInboundServer, listenSmtp, type InboundLimits, type RunningSmtp } from './smtp/inbound-server.ts';
import { lazyTemporalClient } from './temporal/client.ts';
import type { Client } from '@temporalio/client';
import { createAuthenticator } from './modules/auth/authenticator.ts';
import { createIdempotencyStore } from './modules/idempotency/idempotency.store.ts';
import { createTokenBucket } from './modules/rate-limit/token-bucket.ts';
import { createSendsService } from './modules/sends/sends.service.ts';
import { createRedis } from './redis/client.ts';
import { createSubmissionGuard, type SubmissionLimits } from './smtp/submission-guard.ts';
import { createSubmissionServer } from './smtp/submission-server.ts';

export interface SmtpOptions {
  /** Replaces the configured blob store (BLOB_STORE); not closed here. */
  blobs?: BlobStore | null;
  limits?: Partial<InboundLimits>;
  /** An ORM shared with other parts of the process (`herald all`); not closed here. */
  orm?: MikroORM;
  /** The submission front door's AUTH lockout and connection cap (defaults: DEFAULT_SUBMISSION_LIMITS). */
  submissionLimits?: Partial<SubmissionLimits>;
}

/** The submission front door (src/smtp/submission-server.ts) on its own port, with what it needs to accept a send. */
async function startSubmission(
  config: Config,
  listen: NonNullable<Config['submission']>,
  logger: Logger,
  shared: {
    orm: MikroORM;
    blobs: BlobStore | null;
    temporal: Client;
    outage: DatabaseOutage;
    limits?: Partial<SubmissionLimits> | undefined;
  },
): Promise<{ port: number; implicitTlsPort: number | null; close(): Promise<void> }> {
  const redis = createRedis(config, logger);
  const deps = {
    config,
    logger,
    authenticator: createAuthenticator({ orm: shared.orm }),
    sends: createSendsService({ orm: shared.orm, blobs: shared.blobs, temporal: shared.temporal, config, logger }),
    idempotency: createIdempotencyStore({ orm: shared.orm }),
    bucket: createTokenBucket(redis),
    // One guard for both ports: the connection cap counts a client's connections to either.
    guard: createSubmissionGuard(redis, logger, shared.limits),
    outage: shared.outage,
  };
  const servers = [
    createSubmissionServer(deps),
    ...(listen.implicitTlsPort !== undefined ? [createSubmissionServer(deps, { implicitTls: true })] : []),
  ];
  for (const server of servers) server.on('error', (error) => logger.warn('smtp submission connection error', { error }));
  const port = await listenSmtp(servers[0]!, listen.port, listen.host);
  logger.info('smtp submission listening', { port, host: listen.host });
  const implicitTlsPort = servers[1] ? await listenSmtp(servers[1], listen.implicitTlsPort!, listen.host) : null;
  if (implicitTlsPort !== null) logger.info('smtp submission (implicit TLS) listening', { port: implicitTlsPort, host: listen.host });
  return {
    port,
    implicitTlsPort,
    async close() {
      await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
      redis.disconnect();
    },
  };
}

/**
 * The smtp process: the inbound MX listener, and the submission front door (SMTP_SUBMISSION_PORT). Stateless; replicas scale behind MX records. It
 * needs PostgreSQL and the blob store to accept mail; Temporal is connected lazily, and while it
 * is away accepted messages wait for the worker's reconciler.
 */
export async function startSmtp(config: Config, logger: Logger, options: SmtpOptions = {}): Promise<RunningSmtp> {
  const orm = options.orm ?? (await createOrm({ databaseUrl: config.database.url, poolMax: config.database.poolMax }));
  const temporal = lazyTemporalClient(config);
  const blobs = options.blobs === undefined ? await openBlobStore(config, logger, 'smtp') : options.blobs;
  const outage = createDatabaseOutage({ logger, probe: () => orm.checkConnection() });
  const inbound = createInboundServer({
    config,
    orm,
    logger,
    blobs,
    outage,
    temporal: temporal.client,
    ...(options.limits ? { limits: options.limits } : {}),
  });
  inbound.server.on('error', (error) => logger.warn('smtp connection error', { error }));
  const port = await listenSmtp(inbound.server, config.smtp.port, config.smtp.host);
  logger.info('smtp listening', { port, host: config.smtp.host });
  const submission = config.submission
    ? await startSubmission(config, config.submission, logger, {
        orm,
        blobs,
        temporal: temporal.client,
        outage,
        limits: options.submissionLimits,
      })
    : null;
  return {
    port,
    submissionPort: submission?.port ?? null,
    submissionsPort: submission?.implicitTlsPort ?? null,
    async close() {
      await Promise.all([new Promise<void>((resolve) => inbound.server.close(() => resolve())), submission?.close()]);
      await inbound.settle();
      outage.close();
      await temporal.close();
      if (options.blobs === undefined) blobs?.close();
      if (!options.orm) await orm.close();
    },
  };
}
