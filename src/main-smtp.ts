import { createOrm, type MikroORM } from '../db/orm.ts';
import { createBlobStore, type BlobStore } from './blob/blob-store.ts';
import type { Config } from './config.ts';
import type { Logger } from './logger.ts';
import { createInboundServer, listenSmtp, type InboundLimits, type RunningSmtp } from './smtp/inbound-server.ts';
import { lazyTemporalClient } from './temporal/client.ts';

export interface SmtpOptions {
  /** Replaces the configured blob store (BLOB_DIR). */
  blobs?: BlobStore | null;
  limits?: Partial<InboundLimits>;
  /** An ORM shared with other parts of the process (`herald all`); not closed here. */
  orm?: MikroORM;
}

/**
 * The smtp process: the inbound MX listener. Stateless; replicas scale behind MX records. It
 * needs PostgreSQL and the blob store to accept mail; Temporal is connected lazily, and while it
 * is away accepted messages wait for the worker's reconciler.
 */
export async function startSmtp(config: Config, logger: Logger, options: SmtpOptions = {}): Promise<RunningSmtp> {
  const orm = options.orm ?? (await createOrm({ databaseUrl: config.database.url, poolMax: config.database.poolMax }));
  const temporal = lazyTemporalClient(config);
  const blobs = options.blobs === undefined ? createBlobStore(config) : options.blobs;
  if (!blobs) logger.warn('smtp: BLOB_DIR is empty; every message will be answered 451');
  const inbound = createInboundServer({ config, orm, logger, blobs, temporal: temporal.client, ...(options.limits ? { limits: options.limits } : {}) });
  inbound.server.on('error', (error) => logger.warn('smtp connection error', { error }));
  const port = await listenSmtp(inbound.server, config.smtp.port, config.smtp.host);
  logger.info('smtp listening', { port, host: config.smtp.host });
  return {
    port,
    async close() {
      await new Promise<void>((resolve) => inbound.server.close(() => resolve()));
      await inbound.settle();
      await temporal.close();
      if (!options.orm) await orm.close();
    },
  };
}
