import type { Redis } from 'ioredis';
import { redisKeys } from '../../redis/keys.ts';
import type { RateLimitProfile } from '../auth/key-context.ts';

/**
 * Token bucket in one atomic Lua script, on Redis's clock: capacity = burst, refilled at
 * requests_per_minute / 60 per second. Takes `cost` tokens `count` times in a row at the same
 * instant (the requests of one key that arrived in one event-loop turn, in their order) and
 * returns, for each take, whether it may pass, the whole tokens left, when the next token
 * arrives and when the bucket is full again: exactly what `count` calls one after the other
 * would return.
 */
const SCRIPT = `
local capacity = tonumber(ARGV[1])
local per_ms = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local count = tonumber(ARGV[4] or '1')
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
local out = {}
local full_ms = 0
for i = 1, count do
  local allowed = 0
  local retry_ms = 0
  if tokens >= cost then
    tokens = tokens - cost
    allowed = 1
  else
    retry_ms = math.ceil((cost - tokens) / per_ms)
  end
  full_ms = math.ceil((capacity - tokens) / per_ms)
  out[#out + 1] = allowed
  out[#out + 1] = math.floor(tokens)
  out[#out + 1] = retry_ms
  out[#out + 1] = full_ms
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[1], full_ms + 1000)
return out
`;

export interface BucketDecision {
  allowed: boolean;
  remaining: number;
  retryAfterMs: number;
  fullInMs: number;
}

type BucketCommand = (key: string, capacity: number, perMs: number, cost: number, count: number) => Promise<number[]>;

/** The takes of one bucket (key and profile) waiting for the end of the event-loop turn. */
interface PendingTakes {
  key: string;
  capacity: number;
  perMs: number;
  waiters: { resolve: (decision: BucketDecision) => void; reject: (error: unknown) => void }[];
}

/** The decision of the `i`th take of a batch, from the script's flat reply. */
function decisionAt(reply: number[], i: number): BucketDecision {
  const at = i * 4;
  return { allowed: reply[at] === 1, remaining: reply[at + 1]!, retryAfterMs: reply[at + 2]!, fullInMs: reply[at + 3]! };
}

/**
 * The rate limiter's buckets in Redis. Takes are gathered until the end of the event loop's
 * turn (setImmediate) and each bucket's takes go to Redis as one script call: under load the
 * concurrent requests of one key arrive in the same turn, and a command per request cost the
 * api's busiest read more CPU than its database statement's round trip (BENCHMARKS.md).
 */
export function createTokenBucket(redis: Redis) {
  // A defined command runs as EVALSHA (the script is sent once, then only its hash), falling
  // back to EVAL when Redis lost its script cache.
  redis.defineCommand('heraldTakeToken', { numberOfKeys: 1, lua: SCRIPT });
  const takeTokens = (redis as unknown as { heraldTakeToken: BucketCommand }).heraldTakeToken.bind(redis);
  const pending = new Map<string, PendingTakes>();

  function flush(): void {
    const batches = [...pending.values()];
    pending.clear();
    for (const batch of batches) {
      takeTokens(batch.key, batch.capacity, batch.perMs, 1, batch.waiters.length).then(
        (reply) => batch.waiters.forEach((waiter, i) => waiter.resolve(decisionAt(reply, i))),
        (error: unknown) => batch.waiters.forEach((waiter) => waiter.reject(error)),
      );
    }
  }

  return {
    take(apiKeyId: string, profile: RateLimitProfile): Promise<BucketDecision> {
      const key = redisKeys.rateLimitBucket(apiKeyId);
      const perMs = profile.requests_per_minute / 60_000;
      const id = `${key}\n${profile.burst}\n${perMs}`;
      return new Promise((resolve, reject) => {
        let batch = pending.get(id);
        if (!batch) {
          if (pending.size === 0) setImmediate(flush);
          batch = { key, capacity: profile.burst, perMs, waiters: [] };
          pending.set(id, batch);
        }
        batch.waiters.push({ resolve, reject });
      });
    },
  };
}

export type TokenBucket = ReturnType<typeof createTokenBucket>;
