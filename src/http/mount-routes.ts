import type Router from '@koa/router';
import type { Context } from 'koa';
import { AppError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { IdempotencyStore } from '../modules/idempotency/idempotency.store.ts';
import { respond } from './envelope.ts';
import { idempotency } from './middleware/idempotency.ts';
import { requireScope } from './middleware/require-scope.ts';
import { isWrite, type AnyRoute } from './route.ts';
import { callerOf, type HeraldState } from './state.ts';
import { parseInput } from './validation.ts';

/** The JSON body of a request, `{}` when there is none; any other content type is refused. */
function jsonBody(ctx: Context): unknown {
  const kind = ctx.request.is('application/json', '+json');
  if (kind === null) return {};
  if (kind === false) {
    throw new AppError('invalid_request', 'The request body must be JSON (Content-Type: application/json).', {
      reason: 'UNSUPPORTED_CONTENT_TYPE',
      fields: [{ path: 'Content-Type', location: 'header', type: 'content_type', message: 'must be application/json' }],
    });
  }
  return ctx.request.body;
}

function queryObject(querystring: string): Record<string, string> {
  return Object.fromEntries(new URLSearchParams(querystring));
}

/**
 * Mounts route definitions on a router. Per request: scope check → idempotency (writes) →
 * valibot parse of path, query and body → handler → success envelope.
 */
export function mountRoutes(
  router: Router<HeraldState>,
  routes: readonly AnyRoute[],
  deps: { idempotency: IdempotencyStore; publicUrl: string; logger: Logger },
): void {
  for (const route of routes) {
    const middleware = [requireScope(route.scope)];
    if (isWrite(route)) {
      middleware.push(
        idempotency({
          store: deps.idempotency,
          required: route.idempotency !== 'optional',
          publicUrl: deps.publicUrl,
          logger: deps.logger,
        }),
      );
    }
    router.register(route.path, [route.method], [
      ...middleware,
      async (ctx) => {
        const params = route.params ? await parseInput(route.params, ctx.params, 'path') : undefined;
        const query = route.query ? await parseInput(route.query, queryObject(ctx.querystring), 'query') : undefined;
        const body = route.body ? await parseInput(route.body, jsonBody(ctx), 'body') : undefined;
        const result = await route.handle({
          caller: callerOf(ctx.state),
          params,
          query,
          body,
          requestId: ctx.state.requestId,
        });
        respond(ctx, result.status, result.data, result.pagination ? { pagination: result.pagination } : {});
      },
    ], { name: route.operationId });
  }
}
