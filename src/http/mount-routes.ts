import type Router from '@koa/router';
import { AppError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { DatabaseOutage } from '../db/outage.ts';
import type { IdempotencyStore } from '../modules/idempotency/idempotency.store.ts';
import type { OffloadPool } from '../offload/offload-pool.ts';
import { respond, successEnvelope } from './envelope.ts';
import { IDEMPOTENCY_HEADER, idempotency } from './middleware/idempotency.ts';
import { readBody } from './middleware/read-body.ts';
import { requireScope } from './middleware/require-scope.ts';
import type { IdempotentAnswer } from '../modules/idempotency/idempotency.types.ts';
import { isWrite, type AnyRoute } from './route.ts';
import { callerOf, type HeraldState } from './state.ts';
import { parseInput } from '../validation.ts';

/** The query string as an object, from the parameters `authenticate` parsed when it did. */
function queryObject(querystring: string, parsed: URLSearchParams | undefined): Record<string, string> {
  return Object.fromEntries(parsed ?? new URLSearchParams(querystring));
}

/** Where a NUL character hides in a value (PostgreSQL text cannot store one), or null. */
function nulPath(value: unknown, path: string): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = nulPath(item, path ? `${path}.${i}` : String(i));
      if (found !== null) return found;
    }
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const found = key.includes('\u0000') ? (path ? `${path}.${key}` : key) : nulPath(item, path ? `${path}.${key}` : key);
      if (found !== null) return found;
    }
  }
  return null;
}

/** Text with a NUL character is refused up front (400), never left to fail in the database. */
function refuseNul(value: unknown, location: 'body' | 'query' | 'path'): void {
  const path = nulPath(value, '');
  if (path === null) return;
  throw new AppError('invalid_request', `Invalid ${location}${path ? `.${path}` : ''}: NUL characters are not allowed.`, {
    fields: [{ path, location, type: 'nul_character', message: 'NUL characters are not allowed' }],
  });
}

/**
 * Mounts route definitions on a router. Per request: scope check → body read within the
 * route's limit and JSON bounds → idempotency (writes) → valibot parse of path, query and body → handler → success envelope (or, for a stream
 * result, the raw bytes with the route's headers).
 */
export function mountRoutes(
  router: Router<HeraldState>,
  routes: readonly AnyRoute[],
  deps: { idempotency: IdempotencyStore; publicUrl: string; logger: Logger; offload?: OffloadPool; outage?: DatabaseOutage },
): void {
  for (const route of routes) {
    const middleware = [requireScope(route.scope), readBody(route, deps.offload)];
    if (isWrite(route)) {
      middleware.push(
        idempotency({
          store: deps.idempotency,
          required: route.idempotency !== 'optional',
          publicUrl: deps.publicUrl,
          logger: deps.logger,
          ...(route.storedResponse ? { storedResponse: route.storedResponse } : {}),
          ...(route.claimInTransaction ? { claimInTransaction: true } : {}),
          ...(deps.outage ? { outage: deps.outage } : {}),
        }),
      );
    }
    router.register(
      route.path,
      [route.method],
      [
        ...middleware,
        async (ctx) => {
          const rawQuery = queryObject(ctx.querystring, ctx.state.searchParams);
          const rawBody = route.body ? ctx.state.body : undefined;
          refuseNul(ctx.params, 'path');
          refuseNul(rawQuery, 'query');
          refuseNul(rawBody, 'body');
          const params = route.params ? await parseInput(route.params, ctx.params, 'path') : undefined;
          const query = route.query ? await parseInput(route.query, rawQuery, 'query') : undefined;
          const body = route.body ? await parseInput(route.body, rawBody, 'body', route.bodyErrorReason) : undefined;
          const record = ctx.state.idempotencyRecord;
          const answer = (status: number, data: unknown) => {
            const envelope = successEnvelope(ctx.state, data);
            return { status, body: route.storedResponse ? route.storedResponse.seal(envelope) : envelope };
          };
          const idempotentAnswer: IdempotentAnswer | undefined = record
            ? {
                cte: (status, data) => {
                  const stored = answer(status, data);
                  return deps.idempotency.answerCte(record.id, stored.status, stored.body);
                },
                answer,
                stored: () => {
                  record.stored = true;
                },
                ...(record.claim ? { claim: record.claim } : {}),
              }
            : undefined;
          const result = await route.handle({
            caller: callerOf(ctx.state),
            params,
            query,
            body,
            requestId: ctx.state.requestId,
            ...(idempotentAnswer ? { idempotentAnswer, idempotencyKey: ctx.get(IDEMPOTENCY_HEADER) } : {}),
          });
          if ('stream' in result) {
            ctx.status = result.status;
            ctx.body = result.stream;
            // After the body: Koa's body setter may drop a Content-Length set before it.
            ctx.set(result.headers);
            return;
          }
          respond(ctx, result.status, result.data, result.pagination ? { pagination: result.pagination } : {});
        },
      ],
      { name: route.operationId },
    );
  }
}
