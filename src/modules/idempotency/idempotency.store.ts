import type { MikroORM } from '@mikro-orm/postgresql';
import type { SqlFragment } from '../../../db/sql-fragment.ts';
import { newId } from '../../../db/ids.ts';
import { executePrepared } from '../../../db/prepared.ts';
import { completeRecord, deleteRunningRecord, findRecord, isRecordCompleted } from './idempotency.repo.ts';

export interface IdempotencyScope {
  orgId: string;
  apiKeyId: string;
  key: string;
  fingerprint: string;
}

export type BeginResult =
  | { kind: 'started'; recordId: string }
  | { kind: 'replay'; status: number; body: unknown }
  | { kind: 'in_progress' }
  | { kind: 'mismatch' };

/**
 * The claim: one INSERT … ON CONFLICT that takes a new key, an expired record, or a running one
 * abandoned past the lock timeout, and returns the record id; nothing when another request holds
 * the key.
 */
function claimOf(recordId: string, scope: IdempotencyScope, ttlSeconds: number, lockTimeoutSeconds: number) {
  return {
    statement: `insert into idempotency_records
         (id, org_id, api_key_id, key, fingerprint, state, response_status, response_body, created_at, expires_at)
       values (:idemId, :idemOrg, :idemApiKey, :idemKey, :idemFingerprint, 'running', null, null, now(), now() + make_interval(secs => :idemTtl::int))
       on conflict (org_id, api_key_id, key) do update
         set fingerprint = excluded.fingerprint, state = 'running', response_status = null,
             response_body = null, created_at = excluded.created_at, expires_at = excluded.expires_at
         where idempotency_records.expires_at <= now()
            or (idempotency_records.state = 'running'
                and idempotency_records.fingerprint = excluded.fingerprint
                and idempotency_records.created_at < now() - make_interval(secs => :idemLockTimeout::int))
       returning id`,
    params: {
      idemId: recordId,
      idemOrg: scope.orgId,
      idemApiKey: scope.apiKeyId,
      idemKey: scope.key,
      idemFingerprint: scope.fingerprint,
      idemTtl: ttlSeconds,
      idemLockTimeout: lockTimeoutSeconds,
    },
  };
}

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
      const claim = claimOf(newId(), scope, ttl, lockTimeout);
      const [claimed] = await executePrepared<{ id: string }>(options.orm.em.fork(), { sql: claim.statement, params: claim.params });
      if (claimed) return { kind: 'started', recordId: claimed.id };
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
     * commit instead of seeing a running record.
     */
    claimCte(recordId: string, scope: IdempotencyScope): SqlFragment {
      const claim = claimOf(recordId, scope, ttl, lockTimeout);
      return { sql: `idem_claim as (${claim.statement})`, params: claim.params };
    },

    async complete(recordId: string, status: number, body: unknown): Promise<void> {
      await completeRecord(options.orm.em, recordId, status, body);
    },

    /**
     * `complete` as a CTE (`idem_answer`) of the caller's statement, inside its transaction: the
     * answer commits with the change it describes, in the same round trip.
     */
    answerCte(recordId: string, status: number, body: unknown): SqlFragment {
      return {
        sql: `idem_answer as (
          /* workspace: by the id of a record claimed under the workspace of the caller */
          update idempotency_records set state = 'completed', response_status = :idemStatus, response_body = :idemBody::jsonb
           where id = :idemRecord returning id)`,
        params: { idemStatus: status, idemBody: JSON.stringify(body ?? null), idemRecord: recordId },
      };
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
