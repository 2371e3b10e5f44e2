import type { Middleware } from 'koa';
import { resolveClient, type TrustedProxies } from '../trusted-proxies.ts';
import type { HeraldState } from '../state.ts';

/**
 * Sets `ctx.ip` and `ctx.protocol` (so `ctx.secure` and Secure cookies) to the real client's
 * (src/http/trusted-proxies.ts): forwarded headers count only from a trusted proxy. The app runs
 * with Koa's `proxy` off, so nothing else reads them.
 */
export function realClient(trusted: TrustedProxies): Middleware<HeraldState> {
  return async (ctx, next) => {
    const socket = ctx.req.socket as typeof ctx.req.socket & { encrypted?: boolean };
    const client = resolveClient(
      {
        peer: socket.remoteAddress ?? '',
        encrypted: socket.encrypted === true,
        forwardedFor: ctx.get('x-forwarded-for'),
        forwardedProto: ctx.get('x-forwarded-proto'),
      },
      trusted,
    );
    ctx.request.ip = client.address;
    // With app.proxy off Koa's protocol getter answers the connection's scheme; only a trusted
    // proxy's other scheme replaces it (defining a property on each request costs the api's
    // busiest reads a dictionary-mode object per request).
    if (client.scheme !== (socket.encrypted === true ? 'https' : 'http')) {
      Object.defineProperty(ctx.request, 'protocol', { value: client.scheme, configurable: true });
    }
    await next();
  };
}
