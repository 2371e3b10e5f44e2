import type { Middleware } from 'koa';
import type { Logger } from '../../logger.ts';
import { redactPath } from '../redact-path.ts';
import type { HeraldState } from '../state.ts';

/**
 * One line per request at debug level: method, path (never the query string, which may
 * carry a credential someone pasted there, and one-use tokens redacted: redactPath), status,
 * duration, request id.
 */
export function accessLog(logger: Logger): Middleware<HeraldState> {
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      logger.debug('request', {
        requestId: ctx.state.requestId,
        method: ctx.method,
        path: redactPath(ctx.path),
        status: ctx.status,
        ms: Math.round(performance.now() - started),
        org: ctx.state.auth?.orgId,
      });
    }
  };
}
