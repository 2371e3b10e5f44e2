import Router from '@koa/router';
import Koa, { type Middleware } from 'koa';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { Authenticator } from '../modules/auth/authenticator.ts';
import { createDocsRouter } from '../modules/docs/docs.router.ts';
import type { IdempotencyStore } from '../modules/idempotency/idempotency.store.ts';
import type { TokenBucket } from '../modules/rate-limit/token-bucket.ts';
import type { OffloadPool } from '../offload/offload-pool.ts';
import { API_PREFIX } from './constants.ts';
import { accessLog } from './middleware/access-log.ts';
import { requestMetrics } from './middleware/request-metrics.ts';
import { authenticate } from './middleware/authenticate.ts';
import { errorHandler } from './middleware/error-handler.ts';
import type { DatabaseOutage } from '../db/outage.ts';
import { rateLimit } from './middleware/rate-limit.ts';
import { realClient } from './middleware/real-client.ts';
import { requestId } from './middleware/request-id.ts';
import { apiResponseHeaders, strictTransportSecurity } from './middleware/security-headers.ts';
import { mountRoutes } from './mount-routes.ts';
import { buildOpenApi } from './openapi.ts';
import type { AnyRoute } from './route.ts';
import type { HeraldState } from './state.ts';
import { parseTrustedProxies } from './trusted-proxies.ts';

export interface AppDeps {
  config: Pick<Config, 'http'>;
  orm: MikroORM;
  logger: Logger;
  authenticator: Authenticator;
  bucket: TokenBucket;
  idempotency: IdempotencyStore;
  routes: readonly AnyRoute[];
  /** Parses large bodies off the event loop; without it every body is parsed inline. */
  offload?: OffloadPool;
  /** PUT /uploads/:id (signed attachment uploads): raw request streams, mounted before the API routes. */
  uploads: Router<HeraldState>;
  /** The links in broadcast messages (unsubscribe pages, open pixel, tracked links): public, no API key. */
  recipientLinks?: Router<HeraldState>;
  /** The web dashboard for people (/dashboard): its own sessions, HTML pages. */
  dashboard?: Router<HeraldState>;
  /** PostgreSQL outages, logged once each (src/db/outage.ts); without it each 503 is logged. */
  outage?: DatabaseOutage;
}

const API_PATHS = `${API_PREFIX}/`;

/**
 * A router none of whose paths lies under /api/v1/ (uploads, recipient links, the dashboard, the
 * docs): a request of the public API goes past it without its route matching, a regular
 * expression per route of the router, on the API's busiest reads.
 */
function outsideApi(router: Router<HeraldState>): Middleware<HeraldState> {
  const routes = router.routes();
  return async (ctx, next) => {
    if (ctx.path.startsWith(API_PATHS)) await next();
    else await routes(ctx as Parameters<typeof routes>[0], next);
  };
}

/**
 * The HTTP application. Request path: real client (TRUSTED_PROXIES) → HSTS over HTTPS → request id → access log → error envelope → signed
 * uploads (PUT /uploads/:id, raw body) → docs and health → /api/v1: nosniff, no-store → authenticate → rate limit
 * → route (scope → body within the route's limit → idempotency → validation → handler →
 * envelope) → 404 / 405 in the envelope. No body is read before its route is known.
 */
export function createApp(deps: AppDeps): Koa<HeraldState> {
  // Koa's own proxy trust believes anyone's X-Forwarded-*: realClient decides instead (TRUSTED_PROXIES).
  const app = new Koa<HeraldState>({ proxy: false });
  app.silent = true;
  const publicUrl = deps.config.http.publicUrl;
  const trusted = parseTrustedProxies(deps.config.http.trustedProxies.join(','));
  if (typeof trusted === 'string') throw new Error(`TRUSTED_PROXIES: ${trusted}`);

  app.use(realClient(trusted));
  app.use(strictTransportSecurity());
  app.use(requestId());
  app.use(requestMetrics());
  app.use(accessLog(deps.logger));
  app.use(errorHandler(publicUrl, deps.logger, deps.outage));
  app.use(outsideApi(deps.uploads));
  if (deps.recipientLinks) app.use(outsideApi(deps.recipientLinks));
  if (deps.dashboard) app.use(outsideApi(deps.dashboard));

  // Bodiless 404/405/501 statuses come from Koa (nothing matched) and from allowedMethods (a
  // known path, another method; it also sets Allow): render them in the error envelope.
  app.use(async (ctx, next) => {
    await next();
    if (ctx.body != null) return;
    if (ctx.status === 404) throw new AppError('not_found', `No route matches ${ctx.method} ${ctx.path}.`);
    if (ctx.status === 405 || ctx.status === 501) {
      throw new AppError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}.`);
    }
  });

  const openApi = buildOpenApi(deps.routes, { publicUrl });
  const system = new Router<HeraldState>();
  system.get('/healthz', (ctx) => {
    ctx.body = { ok: true };
  });
  system.get('/readyz', async (ctx) => {
    const healthy = (await deps.orm.checkConnection()).ok;
    ctx.status = healthy ? 200 : 503;
    ctx.body = { ok: healthy };
  });
  system.get(`${API_PREFIX}/openapi.json`, (ctx) => {
    ctx.body = openApi;
  });
  app.use(system.routes());
  app.use(outsideApi(createDocsRouter()));

  const api = new Router<HeraldState>({ prefix: API_PREFIX });
  api.use(apiResponseHeaders());
  api.use(authenticate(deps.authenticator));
  api.use(rateLimit(deps.bucket, deps.logger));
  mountRoutes(api, deps.routes, {
    idempotency: deps.idempotency,
    publicUrl,
    logger: deps.logger,
    ...(deps.offload ? { offload: deps.offload } : {}),
    ...(deps.outage ? { outage: deps.outage } : {}),
  });
  app.use(api.routes());
  app.use(api.allowedMethods());
  return app;
}
