import Router from '@koa/router';
import type { Context } from 'koa';
import { escapeHtml } from '../../html-escape.ts';
import type { HeraldState } from '../../http/state.ts';
import type { TrackingDomains } from '../tracking/tracking-domains.service.ts';
import { trackingHostGate } from '../tracking/tracking-host.middleware.ts';
import type { TrackingService } from './tracking.service.ts';
import type { UnsubscribeResult, UnsubscribeService } from './unsubscribe.service.ts';

/** A transparent 1×1 GIF. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/**
 * The public unsubscribe link of a broadcast message, `/unsubscribe/<token>` (no API key: the
 * signed token is the permission):
 * - POST (RFC 8058 one-click, `List-Unsubscribe=One-Click`, or the page's button) unsubscribes;
 * - GET shows a page with that button (and unsubscribes nothing, since link scanners GET links).
 * Plain HTML pages: 200, 404 for a link that was altered or names nothing, 410 once expired.
 */
function page(title: string, body: string): string {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${escapeHtml(title)}</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#1a1a1a}` +
    `button{font:inherit;padding:.5rem 1rem;border:1px solid #1a1a1a;background:#fff;border-radius:4px;cursor:pointer}</style></head>` +
    `<body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`
  );
}

function render(ctx: Context, result: UnsubscribeResult): void {
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'");
  switch (result.outcome) {
    case 'confirm':
      ctx.status = 200;
      ctx.body = page(
        'Unsubscribe',
        `<p>Stop receiving broadcasts from ${escapeHtml(result.sender)} at ${escapeHtml(result.email)}?</p>` +
          `<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>`,
      );
      return;
    case 'unsubscribed':
      ctx.status = 200;
      ctx.body = page(
        'You are unsubscribed',
        `<p>${escapeHtml(result.email)} will no longer receive broadcasts from ${escapeHtml(result.sender)}.</p>`,
      );
      return;
    case 'expired':
      ctx.status = 410;
      ctx.body = page(
        'This link has expired',
        '<p>Unsubscribe links work for 60 days. Use the link in a more recent message, or reply to the sender.</p>',
      );
      return;
    case 'unavailable':
      ctx.status = 503;
      ctx.body = page('Unsubscribe is unavailable', '<p>Please try again later.</p>');
      return;
    default:
      ctx.status = 404;
      ctx.body = page('This link is not valid', '<p>Check that the whole link was copied, or use the link in a more recent message.</p>');
  }
}

/**
 * The public links of messages: unsubscribe (above), the open pixel `GET /t/o/<token>.gif`
 * (always the GIF, uncached; a valid token records an open) and tracked links `GET /t/c/<token>?u=`
 * (302 to exactly the target the token signed, with the click recorded; anything else a 404 page).
 */
export function createRecipientLinksRouter(deps: {
  unsubscribe: UnsubscribeService;
  tracking: TrackingService;
  /** Which Host headers serve tracking paths (tracking-host.middleware.ts); without it, any. */
  trackingHosts?: Pick<TrackingDomains, 'isTrackingHost'>;
}): Router<HeraldState> {
  const router = new Router<HeraldState>();
  if (deps.trackingHosts) router.use(trackingHostGate(deps.trackingHosts));
  router.get('/unsubscribe/:token', async (ctx) => render(ctx, await deps.unsubscribe.preview(ctx.params.token ?? '')));
  router.post('/unsubscribe/:token', async (ctx) => render(ctx, await deps.unsubscribe.unsubscribe(ctx.params.token ?? '')));
  router.get('/t/o/:file', async (ctx) => {
    const file = ctx.params.file ?? '';
    if (file.endsWith('.gif')) await deps.tracking.open(file.slice(0, -'.gif'.length), ctx.get('user-agent') || undefined);
    ctx.set('Cache-Control', 'no-store, max-age=0');
    ctx.type = 'image/gif';
    ctx.body = PIXEL;
  });
  router.get('/t/c/:token', async (ctx) => {
    const target = new URLSearchParams(ctx.querystring).get('u') ?? undefined;
    const to = await deps.tracking.click(ctx.params.token ?? '', target, ctx.get('user-agent') || undefined);
    if (!to) {
      render(ctx, { outcome: 'invalid' });
      return;
    }
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.redirect(to);
  });
  return router;
}
