import { randomBytes } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { KeyContext } from '../auth/key-context.ts';
import { PUBLIC_SCOPES } from '../auth/scopes.ts';
import { sameToken, SESSION_MAX_MS, type SignedIn } from './dashboard-auth.service.ts';
import {
  FORM_COOKIE,
  form,
  one,
  PREFIX,
  send,
  SESSION_COOKIE,
  urlencodedForms,
  type DashboardContext,
  type DashboardDeps,
  type DashboardKit,
} from './dashboard-kit.router.ts';
import { notePage } from './dashboard.pages.ts';

/** The dashboard's cookies: the session's, and the CSRF token of the forms shown before a session exists. */
export interface DashboardCookies {
  /** A form post from another origin is refused (the CSRF token is the main defence; this is a second). */
  sameOrigin(ctx: Context): boolean;
  /** The pre-session CSRF token (sign-in and invitation forms): a random cookie the form repeats. */
  formToken(ctx: Context): string;
  /** Whether a pre-session form came from this origin with its cookie's token. */
  formTokenValid(ctx: Context): boolean;
  /** Sets a new session cookie (no fixation), drops the form cookie and goes to the keys page. */
  startSession(ctx: Context, token: string): void;
  /** Drops the session cookie. */
  endSession(ctx: Context): void;
}

/** The cookies of the dashboard served at `publicUrl` (PUBLIC_URL: its origin is the one forms may come from). */
export function createDashboardCookies(publicUrl: string): DashboardCookies {
  const publicOrigin = new URL(publicUrl).origin;
  const cookieOptions = (ctx: Context, maxAge?: number) => ({
    httpOnly: true,
    sameSite: 'lax' as const,
    path: PREFIX,
    secure: ctx.secure,
    overwrite: true,
    ...(maxAge ? { maxAge } : {}),
  });

  function sameOrigin(ctx: Context): boolean {
    const origin = ctx.get('origin');
    // This server's own origin, from the request line and Host (not `ctx.origin`, which can echo the Origin header).
    return origin === '' || origin === publicOrigin || origin === `${ctx.protocol}://${ctx.host}`;
  }

  function formToken(ctx: Context): string {
    const existing = ctx.cookies.get(FORM_COOKIE);
    if (existing && /^[\w-]{43}$/.test(existing)) return existing;
    const token = randomBytes(32).toString('base64url');
    ctx.cookies.set(FORM_COOKIE, token, { ...cookieOptions(ctx), sameSite: 'strict' });
    return token;
  }

  return {
    sameOrigin,
    formToken,
    formTokenValid: (ctx) => {
      const cookie = ctx.cookies.get(FORM_COOKIE);
      return sameOrigin(ctx) && cookie !== undefined && sameToken(cookie, one(form(ctx)._csrf));
    },
    startSession: (ctx, token) => {
      // Always a new token (no fixation: whatever cookie came in is replaced), and the form cookie goes.
      ctx.cookies.set(SESSION_COOKIE, token, cookieOptions(ctx, SESSION_MAX_MS));
      ctx.cookies.set(FORM_COOKIE, null, cookieOptions(ctx));
      ctx.redirect(`${PREFIX}/keys`);
      ctx.status = 303;
    },
    endSession: (ctx) => ctx.cookies.set(SESSION_COOKIE, null, cookieOptions(ctx)),
  };
}

/** What every area's pages get: forms, the session guard, the person and their API caller, the page answers. */
export function createDashboardKit(deps: DashboardDeps, cookies: DashboardCookies): DashboardKit {
  const notFound = (ctx: DashboardContext, what: string) =>
    send(ctx, 404, notePage('Not found', `This workspace has no such ${what}.`, ctx.state.signedIn));
  return {
    forms: urlencodedForms('64kb'),
    requireSession: sessionGuard(deps, cookies),
    signedInOf: (ctx) => ctx.state.signedIn!,
    callerOf,
    send,
    notFound,
  };
}

/** The workspace keys service's caller for a person: every public scope; live keys for owners only. */
function callerOf(signedIn: SignedIn): KeyContext {
  return {
    orgId: signedIn.orgId,
    orgSlug: null,
    orgName: signedIn.orgName,
    actorUserId: signedIn.userId,
    keyId: null,
    keyMode: signedIn.role === 'owner' ? 'live' : 'test',
    authMethod: 'dashboard',
    scopes: [...PUBLIC_SCOPES],
    rateLimit: { requests_per_minute: 0, burst: 0, source: 'default' },
  };
}

/**
 * Loads the session; pages without one go to sign-in (303), forms without its CSRF token get 403,
 * a form sent again (its `_once` already recorded for the session) gets 409.
 */
function sessionGuard(deps: DashboardDeps, cookies: DashboardCookies) {
  return async function requireSession(ctx: DashboardContext, next: Next): Promise<void> {
    const token = ctx.cookies.get(SESSION_COOKIE);
    const signedIn = token ? await deps.auth.resolve(token) : null;
    if (!signedIn) {
      if (token) cookies.endSession(ctx);
      ctx.redirect(`${PREFIX}/sign-in`);
      ctx.status = 303;
      return;
    }
    if (ctx.method === 'POST' && (!cookies.sameOrigin(ctx) || !sameToken(signedIn.csrfToken, one(form(ctx)._csrf)))) {
      send(ctx, 403, notePage('This form has expired', 'Reload the page and submit it again.', signedIn));
      return;
    }
    // The same form sent again (a double click, a reload after POST) does nothing more.
    const nonce = one(form(ctx)._once);
    if (ctx.method === 'POST' && /^[\w-]{22}$/.test(nonce) && !(await deps.formSentOnce(signedIn.sessionId, nonce))) {
      const text = 'What it asked for was done the first time; it was not done again. Reload the page to see the result.';
      send(ctx, 409, notePage('This form was already sent', text, signedIn));
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
  };
}
