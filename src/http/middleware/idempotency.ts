import type { Middleware } from 'koa';
import { AppError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import type { DatabaseOutage } from '../../db/outage.ts';
import type { BeginResult, IdempotencyScope, IdempotencyStore } from '../../modules/idempotency/idempotency.store.ts';
import { newId } from '../../../db/ids.ts';
import { requestFingerprint } from '../../canonical-json.ts';
import { errorEnvelope, toAppError } from './error-handler.ts';
import type { StoredResponse } from '../../modules/idempotency/idempotency.types.ts';
import type { HeraldState } from '../state.ts';
import { callerOf } from '../state.ts';

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
const MIN_LENGTH = 8;
const MAX_LENGTH = 128;

/** Thrown by a handler whose in-transaction claim found the key held by another request. */
class KeyTaken extends Error {
  constructor() {
    super('Idempotency-Key held by another request');
  }
}

function inProgress(): AppError {
  return new AppError('conflict', `A request with this ${IDEMPOTENCY_HEADER} is still being processed; retry shortly.`, undefined, {
    retryAfterSeconds: 1,
  });
}

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
 * idempotency_conflict; a request still running is 409 conflict. With `claimInTransaction` the
 * handler's transaction claims the key and stores the answer, so both commit with the change
 * (or neither); a failure rolled back is then stored by a claim here.
 */
export function idempotency(options: {
  store: IdempotencyStore;
  required: boolean;
  publicUrl: string;
  logger: Logger;
  /** Seals a stored success response (one-time secrets) and unseals it on replay. */
  storedResponse?: StoredResponse;
  /** The handler claims the key in its own transaction (RouteDefinition.claimInTransaction). */
  claimInTransaction?: boolean;
  /** PostgreSQL outages: a claim that cannot be released during one is released when it ends. */
  outage?: DatabaseOutage;
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
    const scope: IdempotencyScope = {
      orgId: caller.orgId,
      apiKeyId: caller.keyId ?? '',
      key,
      fingerprint: ctx.state.bodyFingerprint ?? requestFingerprint(ctx.method, ctx.path, ctx.state.body),
    };

    /** Answers for a key another request holds (replay, 409 idempotency_conflict, 409 conflict). */
    const answerTaken = (taken: Exclude<BeginResult, { kind: 'started' }>) => {
      if (taken.kind === 'replay') {
        ctx.status = taken.status;
        ctx.body = options.storedResponse && taken.status < 400 ? options.storedResponse.unseal(taken.body) : taken.body;
        ctx.set('Idempotent-Replayed', 'true');
        return;
      }
      if (taken.kind === 'mismatch') {
        throw new AppError(
          'idempotency_conflict',
          `This ${IDEMPOTENCY_HEADER} was already used with a different request; use a new key for a new request.`,
        );
      }
      throw inProgress();
    };

    let recordId: string;
    /** Whether the record is known to exist (claimed here, or by the handler's committed transaction). */
    let claimed: boolean;
    if (options.claimInTransaction) {
      recordId = newId();
      claimed = false;
    } else {
      const begun = await options.store.begin(scope);
      if (begun.kind !== 'started') return answerTaken(begun);
      recordId = begun.recordId;
      claimed = true;
    }

    const record: NonNullable<HeraldState['idempotencyRecord']> = { id: recordId, stored: false };
    const taken = options.claimInTransaction ? new KeyTaken() : null;
    if (taken) {
      record.claim = {
        cte: (answer) => options.store.claimCte(recordId, scope, answer),
        taken: () => taken,
        committed: () => {
          claimed = true;
        },
      };
    }
    ctx.state.idempotencyRecord = record;
    let failure: AppError | undefined;
    let original: Error | undefined;
    try {
      await next();
    } catch (error) {
      if (taken && error === taken) {
        // Another request holds the key (its transaction committed before the claim ran).
        const holder = await options.store.taken(scope);
        return answerTaken(holder ?? { kind: 'in_progress' });
      }
      original = error instanceof Error ? error : new Error(String(error));
      failure = toAppError(error);
    }
    const status = failure?.status ?? ctx.status;
    // The handler stored its answer in its own transaction (storeAnswer): nothing left to do,
    // unless the request failed afterwards and that transaction did not commit.
    if (record.stored) {
      if (original === undefined) return;
      if (await options.store.isCompleted(recordId).catch(() => false)) {
        options.logger.error('request failed after its idempotent answer was committed; retries replay that answer', {
          requestId: ctx.state.requestId,
          error: original,
        });
        throw original;
      }
    }
    if (!claimed) {
      // The handler's claim was rolled back with its transaction (or never ran): claim now to
      // store this answer; a request that took the key meanwhile answers instead.
      if (status >= 500 || status === 429) {
        if (original !== undefined) throw original;
        return;
      }
      const begun = await options.store.begin(scope);
      if (begun.kind !== 'started') return answerTaken(begun);
      recordId = begun.recordId;
    }
    try {
      if (status >= 500 || status === 429) await options.store.abandon(recordId);
      else if (failure) await options.store.complete(recordId, status, errorEnvelope(ctx.state.requestId, options.publicUrl, failure));
      else await options.store.complete(recordId, status, options.storedResponse ? options.storedResponse.seal(ctx.body) : ctx.body);
    } catch (error) {
      const abandon = () => options.store.abandon(recordId);
      // Left running, the claim would answer the client's retries 409 until its lock timed out.
      if (options.outage?.report(error)) options.outage.whenBack(abandon);
      else {
        options.logger.error('idempotency record not saved', { requestId: ctx.state.requestId, error });
        await abandon().catch(() => {});
      }
    }
    if (original !== undefined) throw original;
  };
}
