import type { Redis } from 'ioredis';
import { redisKeys } from '../../redis/keys.ts';
import type { RateLimitProfile } from '../auth/key-context.ts';

/**
 * Token bucket in one atomic Lua script, on Redis's clock: capacity = burst, refilled at
 * requests_per_minute / 60 per second. Returns whether the request may pass, the whole
 * tokens left, when the next token arrives and when the bucket is full again.
 */
const SCRIPT = `
local capacity = tonumber(ARGV[1])
local per_ms = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = capacity
  ts = now
end
tokens = math.min(capacity, tokens + math.max(0, now - ts) * per_ms)
local allowed = 0
local retry_ms = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
else
  retry_ms = math.ceil((cost - tokens) / per_ms)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
local full_ms = math.ceil((capacity - tokens) / per_ms)
redis.call('PEXPIRE', KEYS[1], full_ms + 1000)
return { allowed, math.floor(tokens), retry_ms, full_ms }
`;

export interface BucketDecision {
  allowed: boolean;
  remaining: number;
  retryAfterMs: number;
  fullInMs: number;
}

type BucketCommand = (key: string, capacity: number, perMs: number, cost: number) => Promise<[number, number, number, number]>;

export function createTokenBucket(redis: Redis) {
  // A defined command runs as EVALSHA (the script is sent once, then only its hash), falling
  // back to EVAL when Redis lost its script cache.
  redis.defineCommand('heraldTakeToken', { numberOfKeys: 1, lua: SCRIPT });
  const takeToken = (redis as unknown as { heraldTakeToken: BucketCommand }).heraldTakeToken.bind(redis);
  return {
    async take(apiKeyId: string, profile: RateLimitProfile): Promise<BucketDecision> {
      const perMs = profile.requests_per_minute / 60_000;
      const [allowed, remaining, retryMs, fullMs] = await takeToken(redisKeys.rateLimitBucket(apiKeyId), profile.burst, perMs, 1);
      return { allowed: allowed === 1, remaining, retryAfterMs: retryMs, fullInMs: fullMs };
    },
  };
}

export type TokenBucket = ReturnType<typeof createTokenBucket>;
