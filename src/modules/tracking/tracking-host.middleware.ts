import type { Middleware } from 'koa';
import type { TrackingDomains } from './tracking-domains.service.ts';

/** The paths of open pixels and tracked links (recipient-links.router.ts). */
const TRACKING_PATH = /^\/t\/[oc]\//;

/**
 * Tracking requests are served on Herald's own host and on verified tracking hosts only: a
 * request for a tracking path with any other Host header is 404, so a host nobody verified
 * (or one whose CNAME went away) never serves Herald's links.
 */
export function trackingHostGate(tracking: Pick<TrackingDomains, 'isTrackingHost'>): Middleware {
  return async (ctx, next) => {
    if (TRACKING_PATH.test(ctx.path) && !(await tracking.isTrackingHost(ctx.hostname))) {
      ctx.status = 404;
      ctx.type = 'text/plain; charset=utf-8';
      ctx.set('Cache-Control', 'no-store');
      ctx.body = 'Not found';
      return;
    }
    await next();
  };
}
