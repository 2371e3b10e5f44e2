import type { Server } from 'node:http';
import { createOrm } from '../db/orm.ts';
import type { Config } from './config.ts';
import { createApp } from './http/app.ts';
import type { Logger } from './logger.ts';
import { createAuthenticator } from './modules/auth/authenticator.ts';

export interface RunningApi {
  server: Server;
  url: string;
  close(): Promise<void>;
}

/** The api process: Koa over one ORM; stateless, so replicas scale behind a load balancer. */
export async function startApi(config: Config, logger: Logger): Promise<RunningApi> {
  const orm = await createOrm({ databaseUrl: config.database.url, poolMax: config.database.poolMax });
  const authenticator = createAuthenticator({ orm });
  const app = createApp({ config, orm, logger, authenticator });
  const server = await new Promise<Server>((resolve, reject) => {
    const listening = app.listen(config.http.port, config.http.host, () => resolve(listening));
    listening.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.http.port;
  const url = `http://127.0.0.1:${port}`;
  logger.info('api listening', { url, publicUrl: config.http.publicUrl });
  return {
    server,
    url,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await orm.close();
    },
  };
}
