import type { Middleware } from 'koa';
import { AppError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import type { TokenBucket } from '../../modules/rate-limit/token-bucket.ts';
import { callerOf, type HeraldState, type RateLimitMeta } from '../state.ts';

export type { RateLimitMeta };

/**
 * Per-key token bucket. Every authenticated response carries RateLimit-Limit (the burst),
 * RateLimit-Remaining and RateLimit-Reset (seconds until the bucket is full); a refusal is
 * 429 rate_limited with Retry-After. When Redis is unreachable the request passes (fail
 * open), without Remaining/Reset, and `meta.rate_limit.degraded` says so.
 */
export function rateLimit(bucket: TokenBucket, logger: Logger): Middleware<HeraldState> {
  return async (ctx, next) => {
    const caller = callerOf(ctx.state);
    const profile = caller.rateLimit;
    const base = { limit: profile.burst, requests_per_minute: profile.requests_per_minute, burst: profile.burst };
    ctx.set('RateLimit-Limit', String(profile.burst));
    let decision;
    try {
      decision = await bucket.take(caller.keyId ?? caller.orgId, profile);
    } catch (error) {
      logger.debug('rate limiter unavailable; request allowed', { error });
      ctx.state.rateLimit = { ...base, remaining: null, reset: null, degraded: true };
      await next();
      return;
    }
    const reset = Math.ceil(decision.fullInMs / 1000);
    ctx.set('RateLimit-Remaining', String(decision.remaining));
    ctx.set('RateLimit-Reset', String(reset));
    ctx.state.rateLimit = { ...base, remaining: decision.remaining, reset };
    if (!decision.allowed) {
      const retryAfter = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
      throw new AppError(
        'rate_limited',
        `Rate limit exceeded: ${profile.requests_per_minute} requests per minute with a burst of ${profile.burst}. Retry after ${retryAfter} s.`,
        { retry_after_seconds: retryAfter, requests_per_minute: profile.requests_per_minute, burst: profile.burst },
        { retryAfterSeconds: retryAfter },
      );
    }
    await next();
  };
}
