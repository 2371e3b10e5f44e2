import Router from '@koa/router';
import Koa from 'koa';
import { koaBody } from 'koa-body';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { Authenticator } from '../modules/auth/authenticator.ts';
import { createDocsRouter } from '../modules/docs/docs.router.ts';
import { createMeRouter } from '../modules/me/me.router.ts';
import { AppError } from '../errors.ts';
import { authenticate } from './middleware/authenticate.ts';
import { errorHandler } from './middleware/error-handler.ts';
import { requestId } from './middleware/request-id.ts';
import type { HeraldState } from './state.ts';

export const API_PREFIX = '/api/v1';
/** The request-body ceiling behind REQUEST_TOO_LARGE. */
export const MAX_BODY_BYTES = 25 * 1024 * 1024;

export interface AppDeps {
  config: Pick<Config, 'http'>;
  orm: MikroORM;
  logger: Logger;
  authenticator: Authenticator;
}

/**
 * The HTTP application. Request path: request id → error envelope → body limit → health
 * routes → /api/v1 (authenticate → route: scope → handler) → 404 / 405 in the envelope.
 */
export function createApp(deps: AppDeps): Koa<HeraldState> {
  const app = new Koa<HeraldState>({ proxy: true });
  app.silent = true;

  app.use(requestId());
  app.use(errorHandler(deps.config.http.publicUrl, deps.logger));
  app.use(
    koaBody({
      json: true,
      jsonLimit: MAX_BODY_BYTES,
      jsonStrict: true,
      urlencoded: false,
      text: false,
      multipart: false,
      includeUnparsed: true,
    }),
  );

  const system = new Router<HeraldState>();
  system.get('/healthz', (ctx) => {
    ctx.body = { ok: true };
  });
  system.get('/readyz', async (ctx) => {
    const healthy = (await deps.orm.checkConnection()).ok;
    ctx.status = healthy ? 200 : 503;
    ctx.body = { ok: healthy };
  });
  app.use(system.routes());
  app.use(createDocsRouter().routes());

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

  const api = new Router<HeraldState>({ prefix: API_PREFIX });
  api.use(authenticate(deps.authenticator));
  for (const feature of [createMeRouter()]) {
    api.use(feature.routes());
  }
  app.use(api.routes());
  app.use(api.allowedMethods());
  return app;
}
