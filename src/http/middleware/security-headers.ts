import type { Middleware } from 'koa';
import type { HeraldState } from '../state.ts';

/** One year, subdomains included: a browser that saw Herald over HTTPS never tries plain HTTP again. */
const HSTS = 'max-age=31536000; includeSubDomains';

/**
 * Strict-Transport-Security on every answer whose request really came over HTTPS (`ctx.secure`,
 * which believes X-Forwarded-Proto only from a trusted proxy: middleware/real-client.ts). Never
 * over plain HTTP, where a browser ignores it and a development setup would be pinned to TLS.
 */
export function strictTransportSecurity(): Middleware<HeraldState> {
  return async (ctx, next) => {
    if (ctx.secure) ctx.set('Strict-Transport-Security', HSTS);
    await next();
  };
}

/**
 * The API's answers carry a workspace's data: no content sniffing, and no cache (a browser's, a
 * proxy's) keeps a copy. Set before the route runs, so errors carry them too.
 */
export function apiResponseHeaders(): Middleware<HeraldState> {
  return async (ctx, next) => {
    ctx.set({ 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' });
    await next();
  };
}
