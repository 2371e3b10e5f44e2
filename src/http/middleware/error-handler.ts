import { NotFoundError, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { Context, Middleware } from 'koa';
import type { Logger } from '../../logger.ts';
import { AppError, type ErrorCode } from '../../errors.ts';
import type { DatabaseOutage } from '../../db/outage.ts';
import { databaseUnavailableError, isDatabaseUnavailable } from '../../db/unavailable.ts';
import { redactPath, redactTokens } from '../redact-path.ts';
import type { HeraldState } from '../state.ts';

export function docsUrl(publicUrl: string, code: ErrorCode): string {
  return `${publicUrl}/docs/api/errors/${code}`;
}

interface HttpishError {
  status?: number;
  statusCode?: number;
  type?: string;
  expose?: boolean;
}

/** Maps any thrown error to an AppError; PostgreSQL unavailable is 503 service_unavailable; unknown errors become internal_error. */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  if (isDatabaseUnavailable(error)) return databaseUnavailableError();
  if (error instanceof UniqueConstraintViolationException) {
    return new AppError('conflict', 'The request conflicts with an existing resource.');
  }
  if (error instanceof NotFoundError) {
    return new AppError('not_found', 'The resource does not exist.');
  }
  const http = (typeof error === 'object' && error !== null ? error : {}) as HttpishError;
  const status = http.status ?? http.statusCode;
  if (http.type === 'entity.too.large' || status === 413) {
    return new AppError('payload_too_large', 'The request body is too large.', {
      reason: 'REQUEST_TOO_LARGE',
    });
  }
  if (error instanceof SyntaxError || (status === 400 && http.expose !== false)) {
    return new AppError('invalid_request', 'The request body is not valid JSON.', {
      reason: 'MALFORMED_JSON',
    });
  }
  if (status === 415) {
    return new AppError('invalid_request', 'Unsupported content type; send application/json.');
  }
  return new AppError('internal_error', 'An unexpected error occurred.');
}

/**
 * The error envelope for every failure: `{ok: false, error: {code, message, docs_url,
 * details?}, meta: {request_id}}`. 5xx causes are logged with the request id, never echoed:
 * unexpected failures as errors with their stack, 5xx answers Herald chose as warnings, and
 * PostgreSQL being unavailable once per outage (`outage`, src/db/outage.ts), not per request.
 */
export function errorHandler(publicUrl: string, logger: Logger, outage?: DatabaseOutage): Middleware<HeraldState> {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      const appError = toAppError(error);
      // A PostgreSQL outage is logged once for all the requests it fails (src/db/outage.ts).
      if (!outage?.report(error)) logFailure(logger, ctx, error, appError);
      renderError(ctx, publicUrl, appError);
    }
  };
}

function logFailure(logger: Logger, ctx: Context & { state: HeraldState }, error: unknown, appError: AppError): void {
  if (appError.status < 500) return;
  const request = { requestId: ctx.state.requestId, method: ctx.method, path: redactPath(ctx.path) };
  if (error instanceof AppError) {
    // A 5xx Herald chose to answer (the relay refused the message, storage not configured):
    // worth a warning with its reason, not an error with a stack.
    logger.warn('request answered with a server-side refusal', {
      ...request,
      status: appError.status,
      code: appError.code,
      message: redactTokens(appError.message),
    });
  } else {
    logger.error('request failed', { ...request, error });
  }
}

/** The error envelope for an AppError. */
export function errorEnvelope(requestId: string, publicUrl: string, error: AppError) {
  return {
    ok: false as const,
    error: {
      code: error.code,
      message: error.message,
      docs_url: docsUrl(publicUrl, error.code),
      ...(error.details ? { details: error.details } : {}),
    },
    meta: { request_id: requestId },
  };
}

export function renderError(ctx: Context & { state: HeraldState }, publicUrl: string, error: AppError): void {
  ctx.status = error.status;
  if (error.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(Math.max(0, Math.ceil(error.retryAfterSeconds))));
  if (error.allow) ctx.set('Allow', error.allow.join(', '));
  ctx.body = errorEnvelope(ctx.state.requestId, publicUrl, error);
}
