import type { IdempotencyClaim } from '../modules/idempotency/idempotency.types.ts';
import type { KeyContext } from '../modules/auth/key-context.ts';

export interface RateLimitMeta {
  limit: number;
  remaining: number | null;
  reset: number | null;
  requests_per_minute: number;
  burst: number;
  degraded?: true;
}

/** What Herald's middleware puts on `ctx.state`. */
export interface HeraldState {
  requestId: string;
  /** The query string's parameters, parsed once (by `authenticate`) for the route to read. */
  searchParams?: URLSearchParams;
  auth?: KeyContext;
  rateLimit?: RateLimitMeta;
  /** The parsed JSON request body of a route (`readBody`); `{}` when there is none. */
  body?: unknown;
  /** Its idempotency fingerprint when the offload thread computed it with the parse. */
  bodyFingerprint?: string;
  /** The idempotency record this request claimed (writes with an Idempotency-Key), and whether its answer is already stored. */
  idempotencyRecord?: { id: string; stored: boolean; claim?: IdempotencyClaim };
}

/** The authenticated caller; routes behind `authenticate` always have one. */
export function callerOf(state: HeraldState): KeyContext {
  if (!state.auth) throw new Error('route mounted without authenticate middleware');
  return state.auth;
}
