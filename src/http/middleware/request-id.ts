import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { HeraldState } from '../state.ts';

const ACCEPTABLE = /^[A-Za-z0-9._:-]{1,128}$/;

/** Echoes a sane incoming X-Request-Id or assigns one, on every response. */
export function requestId(): Middleware<HeraldState> {
  return async (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    ctx.state.requestId = ACCEPTABLE.test(incoming) ? incoming : `req_${randomUUID().replaceAll('-', '')}`;
    ctx.set('X-Request-Id', ctx.state.requestId);
    await next();
  };
}
