import type { Middleware } from 'koa';
import { AppError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import type { IdempotencyStore } from '../../modules/idempotency/idempotency.store.ts';
import { requestFingerprint } from '../canonical-json.ts';
import { errorEnvelope, toAppError } from './error-handler.ts';
import type { StoredResponse } from '../route.ts';
import type { HeraldState } from '../state.ts';
import { callerOf } from '../state.ts';

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
const MIN_LENGTH = 8;
const MAX_LENGTH = 128;

function badKey(message: string, type: string): AppError {
  return new AppError('invalid_request', message, {
    fields: [{ path: IDEMPOTENCY_HEADER, location: 'header', type, message }],
  });
}

/**
 * Idempotency for writes (Stripe semantics, durable in PostgreSQL). The key is scoped to the
 * workspace and API key; the fingerprint is method + path + canonical JSON body. A first
 * request runs and its response is stored (except 5xx and 429, so a retry can succeed); the
 * same key and fingerprint replays it with `Idempotent-Replayed: true`; other content is 409
 * idempotency_conflict; a request still running is 409 conflict.
 */
export function idempotency(options: {
  store: IdempotencyStore;
  required: boolean;
  publicUrl: string;
  logger: Logger;
  /** Seals a stored success response (one-time secrets) and unseals it on replay. */
  storedResponse?: StoredResponse;
}): Middleware<HeraldState> {
  return async (ctx, next) => {
    const key = ctx.get(IDEMPOTENCY_HEADER);
    if (!key) {
      if (!options.required) {
        await next();
        return;
      }
      throw badKey(`The ${IDEMPOTENCY_HEADER} header is required on this request.`, 'required');
    }
    if (key.length < MIN_LENGTH || key.length > MAX_LENGTH) {
      throw badKey(`${IDEMPOTENCY_HEADER} must be ${MIN_LENGTH} to ${MAX_LENGTH} characters.`, 'length');
    }
    const caller = callerOf(ctx.state);
    const begun = await options.store.begin({
      orgId: caller.orgId,
      apiKeyId: caller.keyId ?? '',
      key,
      fingerprint: ctx.state.bodyFingerprint ?? requestFingerprint(ctx.method, ctx.path, ctx.state.body),
    });
    if (begun.kind === 'replay') {
      ctx.status = begun.status;
      ctx.body = options.storedResponse && begun.status < 400 ? options.storedResponse.unseal(begun.body) : begun.body;
      ctx.set('Idempotent-Replayed', 'true');
      return;
    }
    if (begun.kind === 'mismatch') {
      throw new AppError(
        'idempotency_conflict',
        `This ${IDEMPOTENCY_HEADER} was already used with a different request; use a new key for a new request.`,
      );
    }
    if (begun.kind === 'in_progress') {
      throw new AppError('conflict', `A request with this ${IDEMPOTENCY_HEADER} is still being processed; retry shortly.`, undefined, {
        'Retry-After': '1',
      });
    }

    ctx.state.idempotencyRecord = { id: begun.recordId, stored: false };
    let failure: AppError | undefined;
    let original: Error | undefined;
    try {
      await next();
    } catch (error) {
      original = error instanceof Error ? error : new Error(String(error));
      failure = toAppError(error);
    }
    const status = failure?.status ?? ctx.status;
    // The handler stored its answer in its own transaction (storeAnswer): nothing left to do,
    // unless the request failed afterwards and that transaction did not commit.
    if (ctx.state.idempotencyRecord.stored) {
      if (original === undefined) return;
      if (await options.store.isCompleted(begun.recordId).catch(() => false)) {
        options.logger.error('request failed after its idempotent answer was committed; retries replay that answer', { requestId: ctx.state.requestId, error: original });
        throw original;
      }
    }
    try {
      if (status >= 500 || status === 429) await options.store.abandon(begun.recordId);
      else if (failure) await options.store.complete(begun.recordId, status, errorEnvelope(ctx.state.requestId, options.publicUrl, failure));
      else await options.store.complete(begun.recordId, status, options.storedResponse ? options.storedResponse.seal(ctx.body) : ctx.body);
    } catch (error) {
      options.logger.error('idempotency record not saved', { requestId: ctx.state.requestId, error });
      await options.store.abandon(begun.recordId).catch(() => {});
    }
    if (original !== undefined) throw original;
  };
}
