/** Bounds of a custom event (POST /events). */
export const EVENT_LIMITS = {
  /** Its properties as JSON, in bytes. */
  propertiesBytes: 10 * 1024,
} as const;
