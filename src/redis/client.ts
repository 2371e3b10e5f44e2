import { Redis } from 'ioredis';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';

/**
 * The Redis connection for request paths: commands fail fast while Redis is unreachable (no
 * offline queue, short timeouts) so callers can degrade instead of hanging; the client keeps
 * reconnecting in the background.
 */
export function createRedis(config: Pick<Config, 'redis'>, logger: Logger): Redis {
  const redis = new Redis(config.redis.url, {
    keyPrefix: config.redis.keyPrefix,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: 500,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    // Commands issued in the same event-loop turn (the rate limit of concurrent requests) go
    // out in one write: every socket write is a system call, a large share of a request's CPU.
    enableAutoPipelining: true,
  });
  let lastWarning = 0;
  redis.on('error', (error: Error) => {
    if (Date.now() - lastWarning > 30_000) {
      lastWarning = Date.now();
      logger.warn('redis unavailable', { error: error.message });
    }
  });
  return redis;
}
