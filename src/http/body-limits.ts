import type { AnyRoute } from './route.ts';

export const KIB = 1024;
export const MIB = 1024 * KIB;

/** Byte limit of a route that declares a body but no `bodyLimit` of its own. */
export const DEFAULT_BODY_LIMIT = 1 * MIB;

/** Byte limit of a route without a body (DELETE, replay, cancel): room for `{}` and little else. */
export const NO_BODY_LIMIT = 1 * KIB;

/**
 * Bounds on the shape of any JSON body, checked on the text before it is parsed: nesting depth,
 * keys of one object, items of one array, and values in the whole body (so a large body is
 * mostly strings, which parse at memory speed, not millions of tiny values). No schema of the
 * API comes near them; they keep parsing, the NUL check, the idempotency fingerprint and
 * validation short and shallow.
 */
export const JSON_BOUNDS = { depth: 32, keys: 1000, items: 1000, values: 100_000 } as const;

export type JsonBounds = { readonly [bound in keyof typeof JSON_BOUNDS]: number };

/** The request-body byte limit of a route, counted while reading (413 REQUEST_TOO_LARGE above it). */
export function bodyLimitOf(route: Pick<AnyRoute, 'body' | 'bodyLimit'>): number {
  return route.bodyLimit ?? (route.body ? DEFAULT_BODY_LIMIT : NO_BODY_LIMIT);
}

/** `1 MiB`, `64 KiB`, `1234 bytes`: a limit as a client reads it. */
export function formatBytes(bytes: number): string {
  if (bytes >= MIB && bytes % MIB === 0) return `${bytes / MIB} MiB`;
  if (bytes >= MIB) return `${(bytes / MIB).toFixed(1)} MiB`;
  if (bytes >= KIB && bytes % KIB === 0) return `${bytes / KIB} KiB`;
  return `${bytes} bytes`;
}
