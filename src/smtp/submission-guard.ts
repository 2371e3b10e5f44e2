import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';
import { redisKeys } from '../redis/keys.ts';

/** The submission front door's limits on clients that guess keys or hold many connections. */
export interface SubmissionLimits {
  /** Failed AUTH per user name within `failureWindowMs` before that name is locked. */
  failuresPerUser: number;
  /** Failed AUTH per client address within `failureWindowMs` (any user names) before the address is locked. */
  failuresPerAddress: number;
  /** The counting window; a lock lasts until the window of its first failure ends. */
  failureWindowMs: number;
  /** Connections one client address holds at once (per smtp process). */
  connectionsPerAddress: number;
}

export const DEFAULT_SUBMISSION_LIMITS: SubmissionLimits = {
  failuresPerUser: 5,
  failuresPerAddress: 10,
  failureWindowMs: 15 * 60_000,
  connectionsPerAddress: 10,
};

/**
 * What the submission server asks before it lets a client in or try a key. Failed
 * authentications are counted in Redis (shared by every smtp process, so a guesser gains
 * nothing by spreading over replicas); connections are counted in this process (a count in
 * Redis would outlive a crashed process). Without Redis (an error, not reachable) nothing is
 * locked: mail keeps flowing, and keys are still 24 random bytes.
 */
export interface SubmissionGuard {
  /** Counts a new connection of `address`; false (and not counted) past the cap. */
  admit(connectionId: string, address: string): boolean;
  /** The connection ended (counted or not). */
  release(connectionId: string): void;
  /** Whether the address, or the address with this user name, is locked out. */
  isLocked(address: string, user?: string): Promise<boolean>;
  /** Records a failed AUTH; returns whether the address or the user name is now locked. */
  recordFailure(address: string, user: string): Promise<boolean>;
}

/** A user name as a key: case and surrounding spaces ignored, hashed (any length, any bytes). */
const userKey = (user: string) => createHash('sha256').update(user.trim().toLowerCase()).digest('hex').slice(0, 32);

export function createSubmissionGuard(redis: Redis, logger: Logger, overrides: Partial<SubmissionLimits> = {}): SubmissionGuard {
  const limits = { ...DEFAULT_SUBMISSION_LIMITS, ...overrides };
  const open = new Map<string, string>();
  const perAddress = new Map<string, number>();
  const keys = (address: string, user?: string) => [
    redisKeys.smtpAuthFailures('ip', address),
    ...(user === undefined ? [] : [redisKeys.smtpAuthFailures('user', userKey(user))]),
  ];
  const locked = (counts: (string | null)[]) =>
    Number(counts[0] ?? 0) >= limits.failuresPerAddress || (counts.length > 1 && Number(counts[1] ?? 0) >= limits.failuresPerUser);

  return {
    admit(connectionId, address) {
      const count = perAddress.get(address) ?? 0;
      if (count >= limits.connectionsPerAddress) return false;
      perAddress.set(address, count + 1);
      open.set(connectionId, address);
      return true;
    },
    release(connectionId) {
      const address = open.get(connectionId);
      if (address === undefined) return;
      open.delete(connectionId);
      const count = (perAddress.get(address) ?? 1) - 1;
      if (count > 0) perAddress.set(address, count);
      else perAddress.delete(address);
    },
    async isLocked(address, user) {
      try {
        return locked(await redis.mget(...keys(address, user)));
      } catch (error) {
        logger.warn('smtp submission: failure counts unavailable; not locking', { error });
        return false;
      }
    },
    async recordFailure(address, user) {
      try {
        const transaction = redis.multi();
        // The window starts at the first failure (SET NX PX); INCR keeps the expiry.
        for (const key of keys(address, user)) transaction.set(key, '0', 'PX', limits.failureWindowMs, 'NX').incr(key);
        const replies = (await transaction.exec()) ?? [];
        const counts = [replies[1]?.[1], replies[3]?.[1]].filter((value): value is number => typeof value === 'number');
        return locked(counts.map(String));
      } catch (error) {
        logger.warn('smtp submission: failure not counted', { error });
        return false;
      }
    },
  };
}
