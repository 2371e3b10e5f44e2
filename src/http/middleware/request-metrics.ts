import type { Middleware } from 'koa';
import { httpRequestDuration } from '../../metrics/metrics.ts';
import type { HeraldState } from '../state.ts';

/**
 * Observes every answer in `herald_http_request_duration_seconds`, labelled with the route
 * pattern the router matched (`/api/v1/contacts/:id`, never the id itself, so the label set
 * stays bounded) or `unmatched`.
 */
export function requestMetrics(): Middleware<HeraldState> {
  return async (ctx, next) => {
    const stop = httpRequestDuration.startTimer();
    try {
      await next();
    } finally {
      const route = (ctx as { _matchedRoute?: unknown })._matchedRoute;
      stop({ method: ctx.method, route: typeof route === 'string' ? route : 'unmatched', status: String(ctx.status) });
    }
  };
}
