import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Router from '@koa/router';
import type { HeraldState } from '../../http/state.ts';
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from '../../db/unavailable.ts';
import { keysArea } from './dashboard-keys.routes.ts';
import { PREFIX, send, type DashboardDeps } from './dashboard-kit.router.ts';
import { createDashboardCookies, createDashboardKit } from './dashboard-session.router.ts';
import { sessionRoutes } from './dashboard-sign-in.routes.ts';
import { notePage } from './dashboard.pages.ts';

/** The pages' files: Herald's own (the automation builder's script only on its pages), and uPlot (the metrics chart) from its npm package. */
const ASSETS: Record<string, { type: string; body: Buffer }> = {
  'dashboard.css': { type: 'text/css; charset=utf-8', body: readFileSync(new URL('./assets/dashboard.css', import.meta.url)) },
  'dashboard.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(new URL('./assets/dashboard.js', import.meta.url)) },
  'automation-builder.js': {
    type: 'text/javascript; charset=utf-8',
    body: readFileSync(new URL('./assets/automation-builder.js', import.meta.url)),
  },
  'template-editor.js': {
    type: 'text/javascript; charset=utf-8',
    body: readFileSync(new URL('./assets/template-editor.js', import.meta.url)),
  },
  'broadcast-chart.js': {
    type: 'text/javascript; charset=utf-8',
    body: readFileSync(new URL('./assets/broadcast-chart.js', import.meta.url)),
  },
  'uplot.js': {
    type: 'text/javascript; charset=utf-8',
    body: readFileSync(fileURLToPath(import.meta.resolve('uplot/dist/uPlot.iife.min.js'))),
  },
  'uplot.css': { type: 'text/css; charset=utf-8', body: readFileSync(fileURLToPath(import.meta.resolve('uplot/dist/uPlot.min.css'))) },
};

const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

/**
 * The web dashboard for people, `/dashboard` (server-rendered pages; docs/decisions.md): sign-in
 * with a password, invitations, and the workspace's API keys. Every page but sign-in and an
 * invitation needs a session (else 303 to sign-in); every form carries a CSRF token (the
 * session's, or a cookie's before sign-in) and must come from this origin. What a page does goes
 * through the same services as the API (workspace keys: scopes, modes, tenancy). The session and
 * its cookies are dashboard-session.router.ts; sign-in and invitations dashboard-sign-in.routes.ts;
 * what every area shares dashboard-kit.router.ts.
 */
export function createDashboardRouter(deps: DashboardDeps): Router<HeraldState> {
  const router = new Router<HeraldState>({ prefix: PREFIX });
  const cookies = createDashboardCookies(deps.publicUrl);
  const kit = createDashboardKit(deps, cookies);

  router.use(async (ctx, next) => {
    ctx.set(SECURITY_HEADERS);
    try {
      await next();
    } catch (error) {
      // PostgreSQL down or starting up: a page that says so, not the API's JSON 500.
      if (!isDatabaseUnavailable(error)) throw error;
      deps.outage?.report(error);
      ctx.set('Retry-After', String(DATABASE_RETRY_AFTER_SECONDS));
      send(ctx, 503, notePage('Temporarily unavailable', 'Herald cannot reach its database right now. Reload this page in a few seconds.'));
    }
  });

  router.get('/assets/:file', (ctx) => {
    const asset = ASSETS[ctx.params.file ?? ''];
    if (!asset) return send(ctx, 404, notePage('Not found', 'There is no such page.'));
    ctx.type = asset.type;
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = asset.body;
  });

  router.get('/', (ctx) => {
    ctx.redirect(`${PREFIX}/keys`);
  });

  sessionRoutes(router, kit, deps, cookies);
  for (const area of [keysArea(deps.keys), ...(deps.areas ?? [])]) area(router, kit);
  return router;
}
