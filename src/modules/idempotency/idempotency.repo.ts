/**
 * The Idempotency-Key store's reads and writes of idempotency_records by key or by record id
 * (idempotency.store.ts). A record id was returned by a claim under the workspace of the caller.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

const COMPLETE_SQL = `/* workspace: by the id of a record claimed under the workspace of the caller */ update idempotency_records set state = 'completed', response_status = ?, response_body = ?::jsonb where id = ?`;

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
  await em.getConnection().execute(COMPLETE_SQL, [status, JSON.stringify(body ?? null), recordId]);
}

/** Reads whether the record is completed (holds a stored answer). */
export async function isRecordCompleted(em: EntityManager, recordId: string): Promise<boolean> {
  const rows = await em.getConnection().execute<{ id: string }[]>(`/* workspace: by the id of a record claimed under the workspace of the caller */ select id from idempotency_records where id = ? and state = 'completed'`, [recordId]);
  return rows.length > 0;
}

/** Deletes the record while it is still running (a claim whose answer is not stored). */
export async function deleteRunningRecord(em: EntityManager, recordId: string): Promise<void> {
  await em.getConnection().execute(`/* workspace: by the id of a record claimed under the workspace of the caller */ delete from idempotency_records where id = ? and state = 'running'`, [recordId]);
}
