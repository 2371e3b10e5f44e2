import type Router from '@koa/router';
import type { Context, Next } from 'koa';
import { koaBody } from 'koa-body';
import { AppError, type ErrorCode } from '../../errors.ts';
import type { HeraldState } from '../../http/state.ts';
import type { DatabaseOutage } from '../../db/outage.ts';
import type { KeyContext } from '../auth/key-context.ts';
import type { WorkspaceKeysService } from '../auth/workspace-keys.service.ts';
import type { TokenBucket } from '../rate-limit/token-bucket.ts';
import type { DashboardAuthService, SignedIn } from './dashboard-auth.service.ts';

/**
 * What every part of the dashboard shares: the request context, the kit an area registers its
 * routes with, the router's dependencies, and the helpers pages use to read forms and answer.
 * dashboard.router.ts assembles the /dashboard router from these.
 */

/** The session cookie (HttpOnly) and the sign-in forms' CSRF cookie (before a session exists). */
export const SESSION_COOKIE = 'herald_session';
export const FORM_COOKIE = 'herald_form';
export const PREFIX = '/dashboard';

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

export type Middleware = (ctx: DashboardContext, next: Next) => Promise<void>;

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

/** Answers an HTML page. */
export function send(ctx: Context, status: number, page: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = page;
}
