import type { Middleware } from 'koa';
import { AppError } from '../../errors.ts';
import type { HeraldState } from '../state.ts';

/** 403 missing_scope unless the caller's key holds `scope`. */
export function requireScope(scope: string): Middleware<HeraldState> {
  return async (ctx, next) => {
    if (!ctx.state.auth?.scopes.includes(scope)) {
      throw new AppError('missing_scope', `This operation requires the ${scope} scope.`, {
        required_scope: scope,
      });
    }
    await next();
  };
}
