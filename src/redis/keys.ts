/** Every Redis key Herald uses, built in one place: `<purpose>:<scope>:<id>` (after the configured prefix). */
export const redisKeys = {
  rateLimitBucket: (apiKeyId: string) => `rl:key:${apiKeyId}`,
  /** A dashboard form already sent: its session and the form's one-time value. */
  dashboardFormSent: (sessionId: string, nonce: string) => `dash:sent:${sessionId}:${nonce}`,
};
