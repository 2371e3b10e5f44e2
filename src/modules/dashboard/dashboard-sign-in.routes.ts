import { AppError } from '../../errors.ts';
import type { DashboardCookies } from './dashboard-session.router.ts';
import { form, one, PREFIX, send, type DashboardArea, type DashboardDeps, type DashboardKit } from './dashboard-kit.router.ts';
import { invitePage, notePage, signInLinkPage, signInPage } from './dashboard.pages.ts';

type Router = Parameters<DashboardArea>[0];
type Auth = Pick<DashboardDeps, 'auth' | 'bucket'>;

/**
 * Sign-in attempts: 10 a minute per email (guessing one person's password), 60 a minute per
 * client address (an office behind one NAT still signs in); then 429 with Retry-After.
 */
const SIGN_IN_PER_EMAIL = { requests_per_minute: 10, burst: 10, source: 'default' } as const;
const SIGN_IN_PER_ADDRESS = { requests_per_minute: 60, burst: 60, source: 'default' } as const;

const LINK_INVALID = ['This sign-in link is not valid', 'It was used already, expired (links last 15 minutes), or is incomplete.'] as const;
const INVITE_INVALID = [
  'This invitation is not valid',
  'It was used already, expired, or the link is incomplete. Ask for a new one.',
] as const;

/**
 * Signing in and out (the pages before a session: sign-in with a password, an operator's
 * one-use sign-in link, an invitation), each form with the pre-session CSRF cookie.
 */
export function sessionRoutes(router: Router, kit: DashboardKit, deps: Auth, cookies: DashboardCookies): void {
  signInRoutes(router, kit, deps, cookies);
  inviteRoutes(router, kit, deps, cookies);
  for (const path of ['/sign-out', '/sign-out-everywhere'] as const) {
    router.post(path, kit.forms, kit.requireSession, async (ctx) => {
      const signedIn = kit.signedInOf(ctx);
      await (path === '/sign-out' ? deps.auth.signOut(signedIn.sessionId) : deps.auth.signOutEverywhere(signedIn));
      cookies.endSession(ctx);
      ctx.redirect(`${PREFIX}/sign-in`);
      ctx.status = 303;
    });
  }
}

/** Sign-in with a password (rate-limited per address and per email) and with a one-use link. */
function signInRoutes(router: Router, { forms }: DashboardKit, { auth, bucket }: Auth, cookies: DashboardCookies): void {
  router.get('/sign-in', (ctx) => send(ctx, 200, signInPage({ csrf: cookies.formToken(ctx) })));

  router.post('/sign-in', forms, async (ctx) => {
    const email = one(form(ctx).email).trim().toLowerCase();
    const again = (status: number, error: string) => send(ctx, status, signInPage({ csrf: cookies.formToken(ctx), email, error }));
    if (!cookies.formTokenValid(ctx)) return again(403, 'The form expired: please sign in again.');
    for (const [key, limit] of [
      [`dashboard-sign-in:ip:${ctx.ip}`, SIGN_IN_PER_ADDRESS],
      [`dashboard-sign-in:email:${email}`, SIGN_IN_PER_EMAIL],
    ] as const) {
      const decision = await bucket.take(key, limit);
      if (!decision.allowed) {
        ctx.set('Retry-After', String(Math.ceil(decision.retryAfterMs / 1000)));
        return again(429, 'Too many sign-in attempts. Wait a minute and try again.');
      }
    }
    const signedIn = await auth.signIn(email, one(form(ctx).password));
    if (!signedIn) return again(401, 'Wrong email or password.');
    cookies.startSession(ctx, signedIn.token);
  });

  router.get('/sign-in/:token', async (ctx) => {
    const found = await auth.findInvite(ctx.params.token ?? '', new Date(), 'sign_in');
    if (!found) return send(ctx, 404, notePage(...LINK_INVALID));
    send(ctx, 200, signInLinkPage({ csrf: cookies.formToken(ctx), orgName: found.orgName, email: found.invite.email }));
  });

  router.post('/sign-in/:token', forms, async (ctx) => {
    if (!cookies.formTokenValid(ctx)) return send(ctx, 403, notePage('This form has expired', 'Open the link again.'));
    const signedIn = await auth.useSignInLink(ctx.params.token ?? '');
    if (!signedIn) return send(ctx, 404, notePage(...LINK_INVALID));
    cookies.startSession(ctx, signedIn.token);
  });
}

/** An invitation: its page, and accepting it with a name and a password (which signs in). */
function inviteRoutes(router: Router, { forms }: DashboardKit, { auth }: Auth, cookies: DashboardCookies): void {
  router.get('/invite/:token', async (ctx) => {
    const found = await auth.findInvite(ctx.params.token ?? '');
    if (!found) return send(ctx, 404, notePage(...INVITE_INVALID));
    send(ctx, 200, invitePage({ csrf: cookies.formToken(ctx), orgName: found.orgName, email: found.invite.email }));
  });

  router.post('/invite/:token', forms, async (ctx) => {
    const token = ctx.params.token ?? '';
    const found = await auth.findInvite(token);
    if (!found) return send(ctx, 404, notePage(...INVITE_INVALID));
    const again = (status: number, error: string) =>
      send(ctx, status, invitePage({ csrf: cookies.formToken(ctx), orgName: found.orgName, email: found.invite.email, error }));
    if (!cookies.formTokenValid(ctx)) return again(403, 'The form expired: please submit it again.');
    try {
      const accepted = await auth.acceptInvite(token, { name: one(form(ctx).name), password: one(form(ctx).password) });
      cookies.startSession(ctx, accepted.token);
    } catch (error) {
      if (error instanceof AppError && error.code === 'invalid_request') return again(400, error.message);
      if (error instanceof AppError && error.code === 'conflict') return send(ctx, 409, notePage('You already have access', error.message));
      throw error;
    }
  });
}
