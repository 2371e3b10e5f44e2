/** Every Redis key Herald uses, built in one place: `<purpose>:<scope>:<id>` (after the configured prefix). */
export const redisKeys = {
  rateLimitBucket: (apiKeyId: string) => `rl:key:${apiKeyId}`,
};
