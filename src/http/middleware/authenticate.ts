import type { Middleware } from 'koa';
import type { Authenticator } from '../../modules/auth/authenticator.ts';
import { AppError } from '../../errors.ts';
import type { HeraldState } from '../state.ts';

/** Query parameters that look like a credential; a request carrying one is refused. */
const CREDENTIAL_PARAMS = ['api_key', 'apikey', 'key', 'token', 'access_token', 'auth', 'authorization', 'bearer'];

const invalidKey = (message: string) => new AppError('invalid_api_key', message);

/**
 * Bearer authentication for /api/v1: `Authorization: Bearer <key>`. A key in the query string
 * is refused (401) before any lookup, and the query string is never logged.
 */
export function authenticate(authenticator: Authenticator): Middleware<HeraldState> {
  return async (ctx, next) => {
    const params = new URLSearchParams(ctx.querystring);
    ctx.state.searchParams = params;
    if (CREDENTIAL_PARAMS.some((name) => params.has(name))) {
      throw invalidKey('API keys must be sent in the Authorization header, never in the URL.');
    }
    const header = ctx.get('Authorization');
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1]) throw invalidKey('Missing API key: send Authorization: Bearer <key>.');
    const context = await authenticator.authenticate(match[1]);
    if (!context) throw invalidKey('The API key is invalid or has been revoked.');
    ctx.state.auth = context;
    await next();
  };
}
