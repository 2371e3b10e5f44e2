/**
 * The Idempotency-Key store's statements on idempotency_records (idempotency.store.ts): the claim
 * of a key, and reads and writes by key or by record id (a record id was returned by a claim
 * under the workspace of the caller).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { executePrepared } from '../../../db/prepared.ts';
import type { SqlFragment } from '../../../db/sql-fragment.ts';

/** Who holds an Idempotency-Key: a workspace's API key, the key, and the request's fingerprint. */
export interface IdempotencyScope {
  orgId: string;
  apiKeyId: string;
  key: string;
  fingerprint: string;
}

/** An answer stored in an idempotency record: the response's status and its body as stored (enveloped, sealed). */
export interface StoredAnswer {
  status: number;
  body: unknown;
}

/**
 * The claim: one INSERT … ON CONFLICT that takes a new key, an expired record, or a running one
 * abandoned past the lock timeout, and returns the record id; nothing when another request holds
 * the key. Run alone (claimRecord) or as a CTE of the statement whose change it guards. With
 * `answer`, the record is claimed completed, holding that answer: for a transaction that knows
 * its answer before its first statement, so the record is written once instead of claimed, then
 * updated with the answer (uncommitted, it holds the key against concurrent requests the same).
 */
export function claimStatement(
  recordId: string,
  scope: IdempotencyScope,
  ttlSeconds: number,
  lockTimeoutSeconds: number,
  answer?: StoredAnswer,
): SqlFragment {
  return {
    sql: `insert into idempotency_records
         (id, org_id, api_key_id, key, fingerprint, state, response_status, response_body, created_at, expires_at)
       values (:idemId, :idemOrg, :idemApiKey, :idemKey, :idemFingerprint, :idemClaimState, :idemClaimStatus::int, :idemClaimBody::json,
               now(), now() + make_interval(secs => :idemTtl::int))
       on conflict (org_id, api_key_id, key) do update
         set fingerprint = excluded.fingerprint, state = excluded.state, response_status = excluded.response_status,
             response_body = excluded.response_body, created_at = excluded.created_at, expires_at = excluded.expires_at
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
      idemClaimState: answer ? 'completed' : 'running',
      idemClaimStatus: answer ? answer.status : null,
      idemClaimBody: answer ? JSON.stringify(answer.body ?? null) : null,
      idemTtl: ttlSeconds,
      idemLockTimeout: lockTimeoutSeconds,
    },
  };
}

/** Runs a claim on its own (a prepared statement: every API write with a key runs it); the record id when claimed. */
export async function claimRecord(em: EntityManager, claim: SqlFragment): Promise<string | undefined> {
  const [claimed] = await executePrepared<{ id: string }>(em, claim);
  return claimed?.id;
}

/** The stored answer of a claimed record (status and body), marking it completed: a statement to run as a CTE of the change it describes. */
export function answerStatement(recordId: string, status: number, body: unknown): SqlFragment {
  return {
    sql: `/* workspace: by the id of a record claimed under the workspace of the caller */
          update idempotency_records set state = 'completed', response_status = :idemStatus, response_body = :idemBody::json
           where id = :idemRecord`,
    params: { idemStatus: status, idemBody: JSON.stringify(body ?? null), idemRecord: recordId },
  };
}

/** The record of a key as another request holds it. */
export interface HeldRecord {
  fingerprint: string;
  state: string;
  response_status: number | null;
  response_body: unknown;
}

/** Reads the record that holds a workspace's API key's Idempotency-Key, or undefined when none does. */
export async function findRecord(em: EntityManager, orgId: string, apiKeyId: string, key: string): Promise<HeldRecord | undefined> {
  const [existing] = await em.getConnection().execute<HeldRecord[]>(
    `select fingerprint, state, response_status, response_body from idempotency_records
          where org_id = ? and api_key_id = ? and key = ?`,
    [orgId, apiKeyId, key],
  );
  return existing;
}

/** Writes the stored answer (status and body) of a record and marks it completed. */
export async function completeRecord(em: EntityManager, recordId: string, status: number, body: unknown): Promise<void> {
  const answer = answerStatement(recordId, status, body);
  await em.execute(answer.sql, answer.params, 'run');
}

/** Reads whether the record is completed (holds a stored answer). */
export async function isRecordCompleted(em: EntityManager, recordId: string): Promise<boolean> {
  const rows = await em
    .getConnection()
    .execute<{ id: string }[]>(
      `/* workspace: by the id of a record claimed under the workspace of the caller */ select id from idempotency_records where id = ? and state = 'completed'`,
      [recordId],
    );
  return rows.length > 0;
}

/** Deletes the record while it is still running (a claim whose answer is not stored). */
export async function deleteRunningRecord(em: EntityManager, recordId: string): Promise<void> {
  await em
    .getConnection()
    .execute(
      `/* workspace: by the id of a record claimed under the workspace of the caller */ delete from idempotency_records where id = ? and state = 'running'`,
      [recordId],
    );
}
