/**
 * The Redis side of per-destination shaping (destination-shaper.ts), one atomic Lua script per
 * step, on Redis's clock. The arithmetic is adaptive-limit.ts's, written again in Lua so every
 * worker process updates one state: KEYS[1] is the destination's hash (limit, successes, level,
 * paused_until, tokens, ts), KEYS[2] the sorted set of its transactions in flight (member: a
 * token, score: when its lease lapses, so a crashed worker's slots come back).
 */

const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/** ARGV: max connections, messages per ms (0: no rate limit), burst, lease ms, token. Returns {granted, retry ms, backing off}. */
export const ACQUIRE_SCRIPT = `${NOW}
local max = tonumber(ARGV[1])
local per_ms = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local lease = tonumber(ARGV[4])
local s = redis.call('HMGET', KEYS[1], 'limit', 'paused_until', 'tokens', 'ts')
local limit = math.min(max, tonumber(s[1]) or max)
local paused_until = tonumber(s[2]) or 0
if paused_until > now then return {0, paused_until - now, 1} end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= limit then return {0, 50, 0} end
if per_ms > 0 then
  local tokens = tonumber(s[3]) or burst
  local ts = tonumber(s[4]) or now
  tokens = math.min(burst, tokens + math.max(0, now - ts) * per_ms)
  if tokens < 1 then return {0, math.ceil((1 - tokens) / per_ms), 0} end
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens - 1), 'ts', tostring(now))
end
redis.call('ZADD', KEYS[2], now + lease, ARGV[5])
redis.call('PEXPIRE', KEYS[2], lease * 2)
redis.call('PEXPIRE', KEYS[1], 86400000)
return {1, 0, 0}
`;

/**
 * ARGV: token, outcome (accepted | temporary | ignored), max connections, back-off base ms,
 * back-off max ms. Returns {limit, level, paused ms}.
 */
export const RELEASE_SCRIPT = `${NOW}
redis.call('ZREM', KEYS[2], ARGV[1])
local outcome = ARGV[2]
local max = tonumber(ARGV[3])
local s = redis.call('HMGET', KEYS[1], 'limit', 'successes', 'cautious', 'level', 'paused_until')
local limit = math.min(max, tonumber(s[1]) or max)
local successes = tonumber(s[2]) or 0
local cautious = tonumber(s[3]) or 0
local level = tonumber(s[4]) or 0
local paused_until = tonumber(s[5]) or 0
if outcome == 'accepted' then
  level = math.max(0, level - 1)
  if limit < max then
    successes = successes + 1
    local step = 1
    if cautious == 1 then step = limit end
    if successes >= step then
      limit = limit + 1
      successes = 0
      if limit >= max then cautious = 0 end
    end
  else
    successes = 0
  end
elseif outcome == 'temporary' then
  limit = math.max(1, math.floor(limit / 2))
  successes = 0
  cautious = 1
  level = math.min(20, level + 1)
  paused_until = now + math.min(tonumber(ARGV[5]), tonumber(ARGV[4]) * 2 ^ (level - 1))
end
redis.call('HSET', KEYS[1], 'limit', limit, 'successes', successes, 'cautious', cautious, 'level', level, 'paused_until', paused_until)
redis.call('PEXPIRE', KEYS[1], 86400000)
return {limit, level, math.max(0, paused_until - now)}
`;
