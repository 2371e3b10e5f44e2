import type { SqlFragment } from '../../../db/sql-fragment.ts';
import type { IdempotencyClaim } from '../idempotency/idempotency.types.ts';
import type { EmailRecord, RecipientRecord } from './sends.serializer.ts';

/** An accepted email as the API answers it: the email's record and its recipients'. */
export interface AcceptedEmail {
  email: EmailRecord;
  recipients: RecipientRecord[];
}

/** The idempotent answer of an acceptance, stored by the acceptance statement (see IdempotentAnswer in http/route.ts). */
export interface AcceptanceAnswer {
  cte(accepted: AcceptedEmail): SqlFragment;
  stored(): void;
  /** The Idempotency-Key claim, run by the transaction's first statement (claimInTransaction). */
  claim?: IdempotencyClaim;
}
