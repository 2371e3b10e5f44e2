import type { MikroORM } from '@mikro-orm/postgresql';
import type { SqlFragment } from '../../../db/sql-fragment.ts';
import { newId } from '../../../db/ids.ts';
import {
  answerStatement,
  claimRecord,
  claimStatement,
  completeRecord,
  deleteRunningRecord,
  findRecord,
  type IdempotencyScope,
  isRecordCompleted,
  type StoredAnswer,
} from './idempotency.repo.ts';

export type { IdempotencyScope, StoredAnswer };

export type BeginResult =
  | { kind: 'started'; recordId: string }
  | { kind: 'replay'; status: number; body: unknown }
  | { kind: 'in_progress' }
  | { kind: 'mismatch' };

export interface IdempotencyStoreOptions {
  orm: MikroORM;
  /** How long a completed response is replayed. */
  ttlSeconds?: number;
  /** A `running` record older than this was abandoned by a crashed request and may be taken over. */
  lockTimeoutSeconds?: number;
}

/**
 * Durable idempotency records in PostgreSQL (Stripe semantics). `begin` claims the key
 * atomically: one INSERT … ON CONFLICT decides between the first request, a replay, a request
 * still running, and a key reused for different content.
 */
export function createIdempotencyStore(options: IdempotencyStoreOptions) {
  const ttl = options.ttlSeconds ?? 24 * 3600;
  const lockTimeout = options.lockTimeoutSeconds ?? 300;

  return {
    async begin(scope: IdempotencyScope): Promise<BeginResult> {
      const claimed = await claimRecord(options.orm.em.fork(), claimStatement(newId(), scope, ttl, lockTimeout));
      if (claimed) return { kind: 'started', recordId: claimed };
      // Deleted in between (an abandoned attempt): claim again.
      return (await this.taken(scope)) ?? this.begin(scope);
    },

    /**
     * What a key another request holds means for this one: its stored answer (replay), a
     * different request (mismatch) or one still running; null when no record holds the key.
     */
    async taken(scope: IdempotencyScope): Promise<Exclude<BeginResult, { kind: 'started' }> | null> {
      const existing = await findRecord(options.orm.em, scope.orgId, scope.apiKeyId, scope.key);
      if (!existing) return null;
      if (existing.fingerprint !== scope.fingerprint) return { kind: 'mismatch' };
      if (existing.state !== 'completed' || existing.response_status === null) return { kind: 'in_progress' };
      return { kind: 'replay', status: existing.response_status, body: existing.response_body };
    },

    /**
     * The claim of `begin` as a CTE (`idem_claim`, one row with the record id when claimed) of
     * the first statement of the caller's transaction: the claim then commits with the change
     * it guards (or not at all), and a concurrent request with the same key waits for that
     * commit instead of seeing a running record. With `answer`, the record is claimed completed
     * with it (claimStatement), and needs no answerCte.
     */
    claimCte(recordId: string, scope: IdempotencyScope, answer?: StoredAnswer): SqlFragment {
      const claim = claimStatement(recordId, scope, ttl, lockTimeout, answer);
      return { sql: `idem_claim as (${claim.sql})`, params: claim.params };
    },

    async complete(recordId: string, status: number, body: unknown): Promise<void> {
      await completeRecord(options.orm.em, recordId, status, body);
    },

    /**
     * `complete` as a CTE (`idem_answer`) of the caller's statement, inside its transaction: the
     * answer commits with the change it describes, in the same round trip.
     */
    answerCte(recordId: string, status: number, body: unknown): SqlFragment {
      const answer = answerStatement(recordId, status, body);
      return { sql: `idem_answer as (${answer.sql} returning id)`, params: answer.params };
    },

    /** Whether the record holds a stored answer. */
    async isCompleted(recordId: string): Promise<boolean> {
      return isRecordCompleted(options.orm.em, recordId);
    },

    /** Forgets a claim whose response must not be stored (5xx, 429), so a retry can succeed. */
    async abandon(recordId: string): Promise<void> {
      await deleteRunningRecord(options.orm.em, recordId);
    },
  };
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>;
