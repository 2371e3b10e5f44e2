import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Router from '@koa/router';
import type { Context, Next } from 'koa';
import { koaBody } from 'koa-body';
import { AppError, type ErrorCode } from '../../errors.ts';
import type { HeraldState } from '../../http/state.ts';
import type { DatabaseOutage } from '../../db/outage.ts';
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from '../../db/unavailable.ts';
import type { KeyContext } from '../auth/key-context.ts';
import { PUBLIC_SCOPES, SCOPE_CATALOG } from '../auth/scopes.ts';
import { KEY_NAME_MAX, type WorkspaceKeysService } from '../auth/workspace-keys.service.ts';
import type { TokenBucket } from '../rate-limit/token-bucket.ts';
import { sameToken, SESSION_MAX_MS, type DashboardAuthService, type SignedIn } from './dashboard-auth.service.ts';
import { invitePage, keysPage, notePage, signInLinkPage, signInPage } from './dashboard.pages.ts';

/** The session cookie (HttpOnly) and the sign-in forms' CSRF cookie (before a session exists). */
export const SESSION_COOKIE = 'herald_session';
export const FORM_COOKIE = 'herald_form';
const PREFIX = '/dashboard';

/**
 * Sign-in attempts: 10 a minute per email (guessing one person's password), 60 a minute per
 * client address (an office behind one NAT still signs in); then 429 with Retry-After.
 */
const SIGN_IN_PER_EMAIL = { requests_per_minute: 10, burst: 10, source: 'default' } as const;
const SIGN_IN_PER_ADDRESS = { requests_per_minute: 60, burst: 60, source: 'default' } as const;

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

export type DashboardContext = Context & { state: HeraldState & { signedIn?: SignedIn } };

/** What an area's pages get to register their routes (dashboard-<area>.routes.ts). */
export interface DashboardKit {
  /** Parses a urlencoded form (64 kB at most). */
  forms: Middleware;
  /** A session is required (else 303 to sign-in); a POST must carry its CSRF token from this origin (else 403). */
  requireSession: Middleware;
  /** The person of a request behind requireSession. */
  signedInOf(ctx: DashboardContext): SignedIn;
  /** The person as a caller of the API's services (every public scope; live keys for owners only). */
  callerOf(signedIn: SignedIn): KeyContext;
  /** Answers an HTML page. */
  send: (ctx: Context, status: number, page: string) => void;
  /** Answers the 404 page for `what` (`domain`, `email`, …) the workspace does not have. */
  notFound: (ctx: DashboardContext, what: string) => void;
}

/** An area of the dashboard: registers its routes on the /dashboard router. */
export type DashboardArea = (router: Router<HeraldState>, kit: DashboardKit) => void;

type Middleware = (ctx: DashboardContext, next: Next) => Promise<void>;

export interface DashboardDeps {
  auth: DashboardAuthService;
  keys: WorkspaceKeysService;
  bucket: TokenBucket;
  /** PUBLIC_URL: a form posted from another origin is refused. */
  publicUrl: string;
  /** The Temporal UI and namespace, for a link to the workspace's workflows (filtered by HeraldOrgId). */
  workflowsUi?: { url: string; namespace: string } | undefined;
  /**
   * Records a form as sent (true the first time for this session and value, for a day): the
   * dashboard's idempotency, as the API's Idempotency-Key (Redis SET NX in the api process).
   */
  formSentOnce: (sessionId: string, nonce: string) => Promise<boolean>;
  /** The other areas' pages (domains, emails, automations, webhooks, inbox, metrics, people). */
  areas?: readonly DashboardArea[];
  /** PostgreSQL outages (src/db/outage.ts): a page that fails for one is a 503 page, logged once per outage. */
  outage?: DatabaseOutage;
}

/** The fields of a urlencoded form, a field given several times as its values. */
export function form(ctx: Context): Record<string, string | string[] | undefined> {
  return (ctx.request.body ?? {}) as Record<string, string | string[] | undefined>;
}
export const one = (value: string | string[] | undefined) => (Array.isArray(value) ? (value[0] ?? '') : (value ?? ''));
/** The `:id` of the route's path (for handlers shared by several routes, where the router does not type it). */
export const pathId = (ctx: Context): string => {
  const { id } = ctx.params as { id?: unknown };
  return typeof id === 'string' ? id : '';
};
/** Whether `error` is the API's error of `code` (a service's refusal the page shows as a message or a 404). */
export const isError = (error: unknown, code: ErrorCode): error is AppError => error instanceof AppError && error.code === code;

/** What `load` finds, or null when the service answers not_found (another workspace's id included). */
export async function orNotFound<T>(load: Promise<T>): Promise<T | null> {
  try {
    return await load;
  } catch (error) {
    if (isError(error, 'not_found')) return null;
    throw error;
  }
}

/** A urlencoded form parser with a body limit (`64kb` for most forms; an editor of the API's large fields more). */
export const urlencodedForms = (formLimit: string) =>
  koaBody({ urlencoded: true, json: false, text: false, multipart: false, formLimit }) as unknown as (
    ctx: DashboardContext,
    next: Next,
  ) => Promise<void>;

export const many = (value: string | string[] | undefined) => (Array.isArray(value) ? value : value === undefined ? [] : [value]);

function send(ctx: Context, status: number, page: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = page;
}

/**
 * The web dashboard for people, `/dashboard` (server-rendered pages; docs/decisions.md): sign-in
 * with a password, invitations, and the workspace's API keys. Every page but sign-in and an
 * invitation needs a session (else 303 to sign-in); every form carries a CSRF token (the
 * session's, or a cookie's before sign-in) and must come from this origin. What a page does goes
 * through the same services as the API (workspace keys: scopes, modes, tenancy).
 */
export function createDashboardRouter(deps: DashboardDeps): Router<HeraldState> {
  const router = new Router<HeraldState>({ prefix: PREFIX });
  const publicOrigin = new URL(deps.publicUrl).origin;
  const forms = urlencodedForms('64kb');

  function cookieOptions(ctx: Context, maxAge?: number) {
    return { httpOnly: true, sameSite: 'lax' as const, path: PREFIX, secure: ctx.secure, overwrite: true, ...(maxAge ? { maxAge } : {}) };
  }

  /** A form post from another origin is refused (the CSRF token is the main defence; this is a second). */
  function sameOrigin(ctx: Context): boolean {
    const origin = ctx.get('origin');
    // This server's own origin, from the request line and Host (not `ctx.origin`, which can echo the Origin header).
    return origin === '' || origin === publicOrigin || origin === `${ctx.protocol}://${ctx.host}`;
  }

  /** The pre-session CSRF token (sign-in and invitation forms): a random cookie the form repeats. */
  function formToken(ctx: Context): string {
    const existing = ctx.cookies.get(FORM_COOKIE);
    if (existing && /^[\w-]{43}$/.test(existing)) return existing;
    const token = randomBytes(32).toString('base64url');
    ctx.cookies.set(FORM_COOKIE, token, { ...cookieOptions(ctx), sameSite: 'strict' });
    return token;
  }

  function formTokenValid(ctx: Context): boolean {
    const cookie = ctx.cookies.get(FORM_COOKIE);
    return sameOrigin(ctx) && cookie !== undefined && sameToken(cookie, one(form(ctx)._csrf));
  }

  function startSession(ctx: Context, token: string): void {
    // Always a new token (no fixation: whatever cookie came in is replaced), and the form cookie goes.
    ctx.cookies.set(SESSION_COOKIE, token, cookieOptions(ctx, SESSION_MAX_MS));
    ctx.cookies.set(FORM_COOKIE, null, cookieOptions(ctx));
    ctx.redirect(`${PREFIX}/keys`);
    ctx.status = 303;
  }

  /** Loads the session; pages without one go to sign-in (303), forms without its CSRF token get 403. */
  async function requireSession(ctx: DashboardContext, next: Next): Promise<void> {
    const token = ctx.cookies.get(SESSION_COOKIE);
    const signedIn = token ? await deps.auth.resolve(token) : null;
    if (!signedIn) {
      if (token) ctx.cookies.set(SESSION_COOKIE, null, cookieOptions(ctx));
      ctx.redirect(`${PREFIX}/sign-in`);
      ctx.status = 303;
      return;
    }
    if (ctx.method === 'POST' && (!sameOrigin(ctx) || !sameToken(signedIn.csrfToken, one(form(ctx)._csrf)))) {
      send(ctx, 403, notePage('This form has expired', 'Reload the page and submit it again.', signedIn));
      return;
    }
    // The same form sent again (a double click, a reload after POST) does nothing more.
    const nonce = one(form(ctx)._once);
    if (ctx.method === 'POST' && /^[\w-]{22}$/.test(nonce) && !(await deps.formSentOnce(signedIn.sessionId, nonce))) {
      send(
        ctx,
        409,
        notePage(
          'This form was already sent',
          'What it asked for was done the first time; it was not done again. Reload the page to see the result.',
          signedIn,
        ),
      );
      return;
    }
    const ui = deps.workflowsUi;
    ctx.state.signedIn = ui
      ? {
          ...signedIn,
          workflowsUrl: `${ui.url}/namespaces/${encodeURIComponent(ui.namespace)}/workflows?query=${encodeURIComponent(`HeraldOrgId="${signedIn.orgId}"`)}`,
        }
      : signedIn;
    await next();
  }

  const signedInOf = (ctx: DashboardContext): SignedIn => ctx.state.signedIn!;

  /** The workspace keys service's caller for a person: every public scope; live keys for owners only. */
  const callerOf = (signedIn: SignedIn): KeyContext => ({
    orgId: signedIn.orgId,
    orgSlug: null,
    orgName: signedIn.orgName,
    actorUserId: signedIn.userId,
    keyId: null,
    keyMode: signedIn.role === 'owner' ? 'live' : 'test',
    authMethod: 'dashboard',
    scopes: [...PUBLIC_SCOPES],
    rateLimit: { requests_per_minute: 0, burst: 0, source: 'default' },
  });

  const notFound = (ctx: DashboardContext, what: string) =>
    send(ctx, 404, notePage('Not found', `This workspace has no such ${what}.`, ctx.state.signedIn));
  const kit: DashboardKit = { forms, requireSession, signedInOf, callerOf, send, notFound };

  async function renderKeys(ctx: DashboardContext, status: number, extra: Partial<Parameters<typeof keysPage>[0]> = {}): Promise<void> {
    const signedIn = signedInOf(ctx);
    const page = await deps.keys.listKeys(signedIn.orgId, { limit: 100 });
    send(ctx, status, keysPage({ signedIn, keys: page.items, scopes: SCOPE_CATALOG.filter((s) => s.launch === 'public'), ...extra }));
  }

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

  router.get('/sign-in', (ctx) => send(ctx, 200, signInPage({ csrf: formToken(ctx) })));

  router.post('/sign-in', forms, async (ctx) => {
    const fields = form(ctx);
    const email = one(fields.email).trim().toLowerCase();
    if (!formTokenValid(ctx))
      return send(ctx, 403, signInPage({ csrf: formToken(ctx), email, error: 'The form expired: please sign in again.' }));
    for (const [key, limit] of [
      [`dashboard-sign-in:ip:${ctx.ip}`, SIGN_IN_PER_ADDRESS],
      [`dashboard-sign-in:email:${email}`, SIGN_IN_PER_EMAIL],
    ] as const) {
      const decision = await deps.bucket.take(key, limit);
      if (!decision.allowed) {
        ctx.set('Retry-After', String(Math.ceil(decision.retryAfterMs / 1000)));
        return send(
          ctx,
          429,
          signInPage({ csrf: formToken(ctx), email, error: 'Too many sign-in attempts. Wait a minute and try again.' }),
        );
      }
    }
    const signedIn = await deps.auth.signIn(email, one(fields.password));
    if (!signedIn) return send(ctx, 401, signInPage({ csrf: formToken(ctx), email, error: 'Wrong email or password.' }));
    startSession(ctx, signedIn.token);
  });

  router.get('/sign-in/:token', async (ctx) => {
    const found = await deps.auth.findInvite(ctx.params.token ?? '', new Date(), 'sign_in');
    if (!found)
      return send(
        ctx,
        404,
        notePage('This sign-in link is not valid', 'It was used already, expired (links last 15 minutes), or is incomplete.'),
      );
    send(ctx, 200, signInLinkPage({ csrf: formToken(ctx), orgName: found.orgName, email: found.invite.email }));
  });

  router.post('/sign-in/:token', forms, async (ctx) => {
    if (!formTokenValid(ctx)) return send(ctx, 403, notePage('This form has expired', 'Open the link again.'));
    const signedIn = await deps.auth.useSignInLink(ctx.params.token ?? '');
    if (!signedIn)
      return send(
        ctx,
        404,
        notePage('This sign-in link is not valid', 'It was used already, expired (links last 15 minutes), or is incomplete.'),
      );
    startSession(ctx, signedIn.token);
  });

  router.get('/invite/:token', async (ctx) => {
    const found = await deps.auth.findInvite(ctx.params.token ?? '');
    if (!found)
      return send(
        ctx,
        404,
        notePage('This invitation is not valid', 'It was used already, expired, or the link is incomplete. Ask for a new one.'),
      );
    send(ctx, 200, invitePage({ csrf: formToken(ctx), orgName: found.orgName, email: found.invite.email }));
  });

  router.post('/invite/:token', forms, async (ctx) => {
    const token = ctx.params.token ?? '';
    const found = await deps.auth.findInvite(token);
    if (!found)
      return send(
        ctx,
        404,
        notePage('This invitation is not valid', 'It was used already, expired, or the link is incomplete. Ask for a new one.'),
      );
    const again = (status: number, error: string) =>
      send(ctx, status, invitePage({ csrf: formToken(ctx), orgName: found.orgName, email: found.invite.email, error }));
    if (!formTokenValid(ctx)) return again(403, 'The form expired: please submit it again.');
    try {
      const accepted = await deps.auth.acceptInvite(token, { name: one(form(ctx).name), password: one(form(ctx).password) });
      startSession(ctx, accepted.token);
    } catch (error) {
      if (error instanceof AppError && error.code === 'invalid_request') return again(400, error.message);
      if (error instanceof AppError && error.code === 'conflict') return send(ctx, 409, notePage('You already have access', error.message));
      throw error;
    }
  });

  router.post('/sign-out', forms, requireSession, async (ctx) => {
    await deps.auth.signOut(signedInOf(ctx).sessionId);
    ctx.cookies.set(SESSION_COOKIE, null, cookieOptions(ctx));
    ctx.redirect(`${PREFIX}/sign-in`);
    ctx.status = 303;
  });

  router.post('/sign-out-everywhere', forms, requireSession, async (ctx) => {
    await deps.auth.signOutEverywhere(signedInOf(ctx));
    ctx.cookies.set(SESSION_COOKIE, null, cookieOptions(ctx));
    ctx.redirect(`${PREFIX}/sign-in`);
    ctx.status = 303;
  });

  router.get('/keys', requireSession, (ctx) => renderKeys(ctx, 200));

  router.post('/keys', forms, requireSession, async (ctx) => {
    const fields = form(ctx);
    const input = { name: one(fields.name).trim(), mode: one(fields.mode) || 'test', scopes: many(fields.scopes) };
    try {
      if (input.name.length === 0 || input.name.length > KEY_NAME_MAX)
        throw new AppError('invalid_request', `Give the key a name of 1 to ${KEY_NAME_MAX} characters.`);
      if (input.mode !== 'test' && input.mode !== 'live') throw new AppError('invalid_request', 'Choose test or live.');
      const { apiKey, key } = await deps.keys.createKey(callerOf(signedInOf(ctx)), {
        name: input.name,
        scopes: input.scopes,
        mode: input.mode,
      });
      await renderKeys(ctx, 201, { created: { name: apiKey.name, secret: key } });
    } catch (error) {
      if (!(error instanceof AppError) || !['invalid_request', 'forbidden'].includes(error.code)) throw error;
      const status = error.code === 'forbidden' ? 403 : 400;
      const text =
        error.code === 'forbidden' && input.mode === 'live'
          ? 'Only an owner can create live keys.'
          : input.scopes.length === 0
            ? 'Choose at least one scope.'
            : error.message;
      await renderKeys(ctx, status, { error: text, form: input });
    }
  });

  router.post('/keys/:id/revoke', forms, requireSession, async (ctx) => {
    try {
      await deps.keys.revokeKey(signedInOf(ctx).orgId, ctx.params.id ?? '');
    } catch (error) {
      if (error instanceof AppError && error.code === 'not_found') return notFound(ctx, 'key');
      throw error;
    }
    ctx.redirect(`${PREFIX}/keys`);
    ctx.status = 303;
  });

  for (const area of deps.areas ?? []) area(router, kit);
  return router;
}
