import { createOrm } from '../db/orm.ts';
import type { Config } from './config.ts';
import type { Logger } from './logger.ts';
import { createInboundServer, listenSmtp, type RunningSmtp } from './smtp/inbound-server.ts';

/** The smtp process: the inbound MX listener. Stateless; replicas scale behind MX records. */
export async function startSmtp(config: Config, logger: Logger): Promise<RunningSmtp> {
  const orm = await createOrm({ databaseUrl: config.database.url, poolMax: config.database.poolMax });
  const server = createInboundServer({ config, orm, logger });
  server.on('error', (error) => logger.warn('smtp connection error', { error }));
  const port = await listenSmtp(server, config.smtp.port, config.smtp.host);
  logger.info('smtp listening', { port, host: config.smtp.host });
  return {
    port,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await orm.close();
    },
  };
}
