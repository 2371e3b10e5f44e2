import type { SqlFragment } from '../../../db/sql-fragment.ts';
import type { IdempotencyClaim, StoredAnswer } from '../idempotency/idempotency.types.ts';
import type { EmailRecord, RecipientRecord } from './sends.serializer.ts';

/** An accepted email as the API answers it: the email's record and its recipients'. */
export interface AcceptedEmail {
  email: EmailRecord;
  recipients: RecipientRecord[];
}

/** The idempotent answer of an acceptance, stored by the acceptance statement (see IdempotentAnswer in http/route.ts). */
export interface AcceptanceAnswer {
  cte(accepted: AcceptedEmail): SqlFragment;
  /** The answer `cte` stores for `accepted`, for a claim that writes it (`claim.cte(answer)`); absent: `cte` only. */
  answer?(accepted: AcceptedEmail): StoredAnswer;
  stored(): void;
  /** The Idempotency-Key claim, run by the transaction's first statement (claimInTransaction). */
  claim?: IdempotencyClaim;
}
