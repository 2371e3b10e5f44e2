import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * The database's sealed values (src/crypto/secret-box.ts) and its key check row. SQL text: the
 * re-encryption and the start-up check are platform work across every workspace.
 */

/** A column holding sealed values: its table, and how one row's value is read and replaced. */
export interface SealedColumn {
  /** How reports name it: `<table>.<column>`. */
  name: string;
  table: string;
  /** SQL expression of the sealed text in a row (a column, or a path inside a JSON column). */
  value: string;
  /** SQL assignment that puts parameter `?` in its place. */
  assign: string;
}

/** Every place Herald keeps a value sealed with its encryption key. */
export const SEALED_COLUMNS: readonly SealedColumn[] = [
  {
    name: 'domains.dkim_private_key_encrypted',
    table: 'domains',
    value: 'dkim_private_key_encrypted',
    assign: 'dkim_private_key_encrypted = ?',
  },
  { name: 'webhook_endpoints.secret_encrypted', table: 'webhook_endpoints', value: 'secret_encrypted', assign: 'secret_encrypted = ?' },
  {
    name: 'webhook_endpoints.previous_secret_encrypted',
    table: 'webhook_endpoints',
    value: 'previous_secret_encrypted',
    assign: 'previous_secret_encrypted = ?',
  },
  {
    // Idempotent replays of a creation that revealed a secret (webhook endpoints, API keys).
    name: 'idempotency_records.response_body',
    table: 'idempotency_records',
    value: `(response_body #>> '{data,secret}')`,
    // Re-sealing goes through jsonb, which reorders that replay's keys (only rows revealing a secret).
    assign: `response_body = jsonb_set(response_body::jsonb, '{data,secret}', to_jsonb(?::text))::json`,
  },
];

export interface SealedRow {
  id: string;
  sealed: string;
}

/**
 * Up to `limit` rows of `column` after `afterId` (by id) whose value is sealed but not under the
 * key `keyId`: a run that stops midway resumes where the values still need moving.
 */
export function listSealedNotUnder(
  em: EntityManager,
  column: SealedColumn,
  keyId: string,
  afterId: string,
  limit: number,
): Promise<SealedRow[]> {
  return em.execute<SealedRow[]>(
    `/* all workspaces: re-encryption covers every workspace's sealed values */
     select id, ${column.value} as sealed from ${column.table}
      where ${column.value} like 'enc:%' and ${column.value} not like ? and id > ?
      order by id limit ?`,
    [`enc:v2:${keyId}:%`, afterId, limit],
  );
}

/** Replaces one sealed value if it is still `previous` (a concurrent rotation wins); true when replaced. */
export async function replaceSealed(em: EntityManager, column: SealedColumn, id: string, previous: string, next: string): Promise<boolean> {
  const replaced = await em.execute<{ id: string }[]>(
    `/* all workspaces: one row by id, found by listSealedNotUnder */
     update ${column.table} set ${column.assign} where id = ? and ${column.value} = ? returning id`,
    [next, id, previous],
  );
  return replaced.length === 1;
}

/** One sealed value of `column` (any row), to try the key ring on; null when it holds none. */
export async function sampleSealed(em: EntityManager, column: SealedColumn): Promise<string | null> {
  const rows = await em.execute<{ sealed: string }[]>(
    `/* all workspaces: the start-up key check samples any sealed value */
     select ${column.value} as sealed from ${column.table} where ${column.value} like 'enc:%' limit 1`,
  );
  return rows[0]?.sealed ?? null;
}

/** How many values of `column` are sealed, and how many of those under the key `keyId`. */
export async function countSealed(em: EntityManager, column: SealedColumn, keyId: string): Promise<{ sealed: number; underKey: number }> {
  const [row] = await em.execute<{ sealed: number; under_key: number }[]>(
    `/* all workspaces: counts for herald admin encryption status */
     select count(*)::int as sealed, (count(*) filter (where ${column.value} like ?))::int as under_key
       from ${column.table} where ${column.value} like 'enc:%'`,
    [`enc:v2:${keyId}:%`],
  );
  return { sealed: row?.sealed ?? 0, underKey: row?.under_key ?? 0 };
}

export interface KeyCheckRow {
  key_id: string;
  sealed_check: string;
}

const CHECK_NAME = 'secrets';

/** The key check row, or null before the first start with a key. */
export async function readKeyCheck(em: EntityManager): Promise<KeyCheckRow | null> {
  const rows = await em.execute<KeyCheckRow[]>(`select key_id, sealed_check from encryption_key_checks where name = ?`, [CHECK_NAME]);
  return rows[0] ?? null;
}

/** Writes the key check unless one is there (two processes starting at once write one). */
export async function insertKeyCheck(em: EntityManager, keyId: string, sealedCheck: string): Promise<void> {
  await em.execute(
    `insert into encryption_key_checks (name, key_id, sealed_check, updated_at) values (?, ?, ?, now()) on conflict (name) do nothing`,
    [CHECK_NAME, keyId, sealedCheck],
    'run',
  );
}

/** Moves the key check to another key (after every value was re-encrypted under it). */
export async function replaceKeyCheck(em: EntityManager, keyId: string, sealedCheck: string): Promise<void> {
  await em.execute(
    `insert into encryption_key_checks (name, key_id, sealed_check, updated_at) values (?, ?, ?, now())
     on conflict (name) do update set key_id = excluded.key_id, sealed_check = excluded.sealed_check, updated_at = now()`,
    [CHECK_NAME, keyId, sealedCheck],
    'run',
  );
}
