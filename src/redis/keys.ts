/** Every Redis key Herald uses, built in one place: `<purpose>:<scope>:<id>` (after the configured prefix). */
export const redisKeys = {
  rateLimitBucket: (apiKeyId: string) => `rl:key:${apiKeyId}`,
  /** A dashboard form already sent: its session and the form's one-time value. */
  dashboardFormSent: (sessionId: string, nonce: string) => `dash:sent:${sessionId}:${nonce}`,
  /** Failed SMTP submission AUTH in the current window: per client address, or per (hashed) user name. */
  smtpAuthFailures: (kind: 'ip' | 'user', id: string) => `smtp-auth:${kind}:${id}`,
  /** Per-destination shaping of outbound mail: the destination's state (limit, back-off, rate) and its transactions in flight (one hash slot, for a cluster). */
  destinationShaping: (destination: string) => ({ state: `shape:dest:{${destination}}`, inFlight: `shape:inflight:{${destination}}` }),
};
