/**
 * Herald's error codes and their HTTP statuses: the spec's Errors table plus the codes Herald
 * adds for statuses the spec lists without naming a code.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_api_key: 401,
  payment_required: 402,
  missing_scope: 403,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  idempotency_conflict: 409,
  payload_too_large: 413,
  unprocessable_entity: 422,
  rate_limited: 429,
  internal_error: 500,
  bad_gateway: 502,
  service_unavailable: 503,
  webhook_signature_invalid: 400,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_STATUS;

export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

/**
 * The one application error: services throw it, the error middleware renders it. It carries
 * data, not protocol: `retryAfterSeconds` (when a retry can succeed) and `allow` (the methods a
 * 405 path takes) become the HTTP `Retry-After` and `Allow` headers in src/http/.
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly allow: readonly string[] | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    details?: Record<string, unknown>,
    options: { retryAfterSeconds?: number; allow?: readonly string[] } = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.details = details;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.allow = options.allow;
  }
}

export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(ERROR_STATUS, value);
}
