import { createOffloadPool } from './offload/offload-pool.ts';
import { createDashboardAuthService } from './modules/dashboard/dashboard-auth.service.ts';
import { createDashboardRouter } from './modules/dashboard/dashboard.router.ts';
import { contactImportsArea } from './modules/dashboard/dashboard-contact-imports.routes.ts';
import { contactsArea } from './modules/dashboard/dashboard-contacts.routes.ts';
import { suppressionsArea } from './modules/dashboard/dashboard-suppressions.routes.ts';
import { segmentsArea } from './modules/dashboard/dashboard-segments.routes.ts';
import { automationsArea } from './modules/dashboard/dashboard-automations.routes.ts';
import { domainsArea } from './modules/dashboard/dashboard-domains.routes.ts';
import { dmarcArea } from './modules/dashboard/dashboard-dmarc.routes.ts';
import { emailsArea } from './modules/dashboard/dashboard-emails.routes.ts';
import { inboxArea } from './modules/dashboard/dashboard-inbox.routes.ts';
import { metricsArea } from './modules/dashboard/dashboard-metrics.routes.ts';
import { peopleArea } from './modules/dashboard/dashboard-people.routes.ts';
import { broadcastsArea } from './modules/dashboard/dashboard-broadcasts.routes.ts';
import { streamsArea } from './modules/dashboard/dashboard-streams.routes.ts';
import { templatesArea } from './modules/dashboard/dashboard-templates.routes.ts';
import { webhooksArea } from './modules/dashboard/dashboard-webhooks.routes.ts';
import { settingsArea } from './modules/dashboard/dashboard-settings.routes.ts';
import type { Server } from 'node:http';
import type { Redis } from 'ioredis';
import { createOrm, type MikroORM } from '../db/orm.ts';
import { createDatabaseOutage } from './db/outage.ts';
import type { Config } from './config.ts';
import { createApp } from './http/app.ts';
import { createCursorCodec } from './http/cursor.ts';
import type { AnyRoute } from './http/route.ts';
import { createApiServices, createRoutes } from './api-composition.ts';
import { openBlobStore } from './blob/open-blob-store.ts';
import type { Logger } from './logger.ts';
import { createUploadsRouter } from './modules/attachments/uploads.router.ts';
import { createRecipientLinksRouter } from './modules/broadcasts/recipient-links.router.ts';
import { createTrackingService } from './modules/broadcasts/tracking.service.ts';
import { createUnsubscribeService } from './modules/broadcasts/unsubscribe.service.ts';
import { createAuthenticator } from './modules/auth/authenticator.ts';
import { createIdempotencyStore } from './modules/idempotency/idempotency.store.ts';
import { createTokenBucket } from './modules/rate-limit/token-bucket.ts';
import { createRedis } from './redis/client.ts';
import { redisKeys } from './redis/keys.ts';
import { lazyTemporalClient } from './temporal/client.ts';

export interface RunningApi {
  server: Server;
  url: string;
  routes: readonly AnyRoute[];
  redis: Redis;
  close(): Promise<void>;
}

/**
 * The api process: Koa over one ORM, one Redis and one Temporal client (it starts workflows,
 * never waits for them); stateless, so replicas scale behind a load balancer.
 */
export async function startApi(config: Config, logger: Logger, shared: { orm?: MikroORM } = {}): Promise<RunningApi> {
  const orm = shared.orm ?? (await createOrm({ databaseUrl: config.database.url, poolMax: config.database.poolMax }));
  await orm.connect();
  const outage = createDatabaseOutage({ logger, probe: () => orm.checkConnection() });
  // Opens on first use: the API serves while Temporal is starting or briefly away.
  const temporal = lazyTemporalClient(config);
  const redis = createRedis(config, logger);
  const offload = createOffloadPool();
  const idempotency = createIdempotencyStore({ orm });
  const bucket = createTokenBucket(redis);
  const dashboardAuth = createDashboardAuthService({ orm });
  const blobs = await openBlobStore(config, logger, 'api');
  const services = createApiServices({ orm, config, temporal: temporal.client, logger, offload, idempotency, blobs });
  const routes = createRoutes(services, createCursorCodec(config.encryptionKeys));
  const app = createApp({
    config,
    orm,
    logger,
    authenticator: createAuthenticator({ orm }),
    bucket,
    idempotency,
    routes,
    offload,
    outage,
    uploads: createUploadsRouter({ attachments: services.attachments, contactImports: services.contactImports }),
    recipientLinks: createRecipientLinksRouter({
      unsubscribe: createUnsubscribeService({ orm, config }),
      tracking: createTrackingService({ orm, config }),
      trackingHosts: services.trackingDomains,
    }),
    dashboard: createDashboardRouter({
      auth: dashboardAuth,
      keys: services.workspaceKeys,
      bucket,
      publicUrl: config.http.publicUrl,
      formSentOnce: async (sessionId, nonce) =>
        (await redis.set(redisKeys.dashboardFormSent(sessionId, nonce), '1', 'EX', 86_400, 'NX')) === 'OK',
      outage,
      workflowsUi: config.temporal.uiUrl ? { url: config.temporal.uiUrl, namespace: config.temporal.namespace } : undefined,
      areas: [
        domainsArea(services),
        dmarcArea(services),
        streamsArea(services),
        emailsArea(services),
        contactImportsArea(services),
        contactsArea(services),
        segmentsArea(services),
        suppressionsArea(services),
        automationsArea(services, orm),
        templatesArea(services, { auth: dashboardAuth }),
        broadcastsArea(services),
        webhooksArea(services),
        inboxArea(services),
        metricsArea(services),
        peopleArea({ auth: dashboardAuth, publicUrl: config.http.publicUrl }),
        settingsArea(services),
      ],
    }),
  });
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
    routes,
    redis,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      redis.disconnect();
      outage.close();
      await offload.close();
      await temporal.close();
      blobs?.close();
      if (!shared.orm) await orm.close();
    },
  };
}
