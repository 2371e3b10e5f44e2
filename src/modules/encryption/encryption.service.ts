import type { EntityManager } from '@mikro-orm/postgresql';
import { ConfigError } from '../../config.ts';
import { decryptSecret, encryptSecret, keyId } from '../../crypto/secret-box.ts';
import { AppError } from '../../errors.ts';
import {
  countSealed,
  insertKeyCheck,
  listSealedNotUnder,
  readKeyCheck,
  replaceKeyCheck,
  replaceSealed,
  sampleSealed,
  SEALED_COLUMNS,
  type SealedColumn,
} from './encryption.repo.ts';

/** The text sealed in the key check row: opening it proves a key ring can read this database. */
const CHECK_TEXT = 'herald encryption key check';

/** The key ring's ids, newest first, as messages show them. */
function idsOf(keys: readonly Buffer[]): string {
  return keys.map((key) => keyId(key)).join(', ');
}

function opensWith(keys: readonly Buffer[], sealed: string): number {
  for (const [index, key] of keys.entries()) {
    try {
      decryptSecret(key, sealed);
      return index;
    } catch {
      // Not this key.
    }
  }
  return -1;
}

function mismatch(sealedUnder: string, keys: readonly Buffer[]): ConfigError {
  const configured = keys.length === 0 ? 'HERALD_ENCRYPTION_KEY is not set' : `the configured key ring is ${idsOf(keys)}`;
  return new ConfigError([
    `HERALD_ENCRYPTION_KEY: this database's secrets (DKIM private keys, webhook signing secrets) are sealed under encryption key ${sealedUnder}, and ${configured}.`,
    'A different key cannot read them, so Herald does not start. Set HERALD_ENCRYPTION_KEY to the key this database was first started with',
    '(during a rotation: the new key in HERALD_ENCRYPTION_KEY and the old one in HERALD_ENCRYPTION_KEYS_PREVIOUS). Key ids are shown, never keys;',
    'see docs/troubleshooting.md, "The encryption key does not match the database".',
  ]);
}

export interface KeyCheckResult {
  /** The key the check row is under: the oldest key whose sealed values may remain. */
  checkedKeyId: string | null;
  /** True when values may remain under a key older than the newest (run the re-encryption). */
  olderKeyInUse: boolean;
}

/**
 * Refuses (ConfigError) a key ring that cannot open this database's sealed values. The first
 * start with a key writes the check row, under the oldest ring key any existing sealed value
 * needs (an upgrade from a version without the check), else under the newest key.
 */
export async function checkEncryptionKey(em: EntityManager, keys: readonly Buffer[]): Promise<KeyCheckResult> {
  const row = await readKeyCheck(em);
  if (row) {
    const index = keys.length === 0 ? -1 : opensWith(keys, row.sealed_check);
    if (index < 0) throw mismatch(row.key_id, keys);
    return { checkedKeyId: row.key_id, olderKeyInUse: index > 0 };
  }
  if (keys.length === 0) return { checkedKeyId: null, olderKeyInUse: false };
  let oldest = 0;
  for (const column of SEALED_COLUMNS) {
    const sample = await sampleSealed(em, column);
    if (sample === null) continue;
    const index = opensWith(keys, sample);
    if (index < 0) throw mismatch(`(unknown: a value of ${column.name} opens with none of the configured keys)`, keys);
    oldest = Math.max(oldest, index);
  }
  const checked = keys[oldest]!;
  await insertKeyCheck(em, keyId(checked), encryptSecret(checked, CHECK_TEXT));
  // Another process may have written the check first, under its own key.
  return checkEncryptionKey(em, keys);
}

export interface ColumnReport {
  column: string;
  reEncrypted: number;
  failed: { id: string; reason: string }[];
}

async function reEncryptColumn(em: EntityManager, keys: readonly Buffer[], column: SealedColumn, batchSize: number): Promise<ColumnReport> {
  const newest = keys[0]!;
  const newestId = keyId(newest);
  const report: ColumnReport = { column: column.name, reEncrypted: 0, failed: [] };
  let afterId = '';
  for (;;) {
    const rows = await listSealedNotUnder(em, column, newestId, afterId, batchSize);
    if (rows.length === 0) return report;
    await em.transactional(async (tx) => {
      for (const row of rows) {
        try {
          const plaintext = decryptSecret(keys, row.sealed);
          // A value replaced meanwhile (a rotated webhook secret) was sealed under the newest key.
          if (await replaceSealed(tx, column, row.id, row.sealed, encryptSecret(newest, plaintext))) report.reEncrypted += 1;
        } catch (error) {
          report.failed.push({ id: row.id, reason: (error as Error).message });
        }
      }
    });
    afterId = rows[rows.length - 1]!.id;
  }
}

export interface ReEncryptReport {
  keyId: string;
  columns: ColumnReport[];
  /** True once every value is under the newest key and the key check moved to it. */
  complete: boolean;
}

/**
 * Seals every sealed value that is not under the newest key again under it, `batchSize` rows
 * per transaction. Safe to interrupt and run again (values already under the newest key are
 * skipped) and to run beside live processes. The key check moves to the newest key only when
 * nothing failed: then the older keys can be dropped.
 */
export async function reEncryptAll(em: EntityManager, keys: readonly Buffer[], batchSize: number): Promise<ReEncryptReport> {
  if (keys.length === 0) throw new AppError('invalid_request', 'HERALD_ENCRYPTION_KEY is not set: there is no key to re-encrypt under');
  await checkEncryptionKey(em, keys);
  const columns: ColumnReport[] = [];
  for (const column of SEALED_COLUMNS) columns.push(await reEncryptColumn(em, keys, column, batchSize));
  const complete = columns.every((column) => column.failed.length === 0);
  if (complete) await replaceKeyCheck(em, keyId(keys[0]!), encryptSecret(keys[0]!, CHECK_TEXT));
  return { keyId: keyId(keys[0]!), columns, complete };
}

/** What `herald admin encryption status` shows: the ring, the key check, sealed values per key. */
export async function describeEncryption(em: EntityManager, keys: readonly Buffer[]) {
  const row = await readKeyCheck(em);
  const newest = keys[0] ? keyId(keys[0]) : null;
  const columns = [];
  for (const column of SEALED_COLUMNS) {
    const counts = newest ? await countSealed(em, column, newest) : { sealed: 0, underKey: 0 };
    columns.push({ column: column.name, sealed: counts.sealed, underNewestKey: counts.underKey });
  }
  return { keyIds: keys.map((key) => keyId(key)), checkedKeyId: row?.key_id ?? null, columns };
}
