import type { SqlFragment } from '../../../db/sql-fragment.ts';
import type { StoredAnswer } from './idempotency.repo.ts';

export type { StoredAnswer };

/*
 * The contracts between the Idempotency-Key middleware (src/http/middleware/idempotency.ts) and
 * the services that keep their idempotent answer in their own transaction: written here, beside
 * the store, so a service needs nothing from src/http/.
 */

/** The Idempotency-Key claim a `claimInTransaction` handler runs in its transaction's first statement. */
export interface IdempotencyClaim {
  /**
   * The claim as a CTE (`idem_claim`: one row with the record id, or none when another request
   * holds the key). With `answer` (IdempotentAnswer.answer), the record is claimed completed
   * with that answer, which then needs no `cte` of IdempotentAnswer (call its `stored` once the
   * transaction committed).
   */
  cte(answer?: StoredAnswer): SqlFragment;
  /** An error to throw (rolling the transaction back) when `idem_claim` was empty: the middleware answers for the key's holder. */
  taken(): Error;
  /** Tells the middleware that the transaction holding the claim committed. */
  committed(): void;
}

export interface IdempotentAnswer {
  /** Present on a `claimInTransaction` route: the claim, which the handler must run. */
  claim?: IdempotencyClaim;
  /** The CTE (`idem_answer`) that stores `data` with `status` as the answer, for a statement of the handler's transaction. */
  cte(status: number, data: unknown): SqlFragment;
  /** The answer `cte` would store for `data` with `status`, for `claim.cte(answer)`. */
  answer(status: number, data: unknown): StoredAnswer;
  /** Tells the middleware that the statement with the CTE ran (its transaction commits or the request fails). */
  stored(): void;
}

/**
 * How a response that holds a one-time secret is kept for Idempotency-Key replays: `seal`
 * runs on the response body before it is stored, `unseal` on a stored body before it is sent.
 */
export interface StoredResponse {
  seal(body: unknown): unknown;
  unseal(body: unknown): unknown;
}
