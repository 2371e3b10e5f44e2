import type { EntityManager } from '@mikro-orm/postgresql';
import { ConfigError } from '../../config.ts';
import { AppError } from '../../errors.ts';
import { describeEncryption, reEncryptAll } from './encryption.service.ts';

/** `herald admin encryption …`: what the key ring and the database hold, and the re-encryption. */
export function createEncryptionAdmin(deps: { em: EntityManager; keys: readonly Buffer[] }) {
  return {
    async status() {
      const status = await describeEncryption(deps.em, deps.keys);
      const json = {
        key_ids: status.keyIds,
        checked_key_id: status.checkedKeyId,
        columns: status.columns.map((c) => ({ column: c.column, sealed: c.sealed, under_newest_key: c.underNewestKey })),
      };
      const lines = [
        `key ring (newest first): ${status.keyIds.join(', ') || 'none (HERALD_ENCRYPTION_KEY is not set)'}`,
        `database checked against: ${status.checkedKeyId ?? 'nothing yet (written by the first start with a key)'}`,
        ...status.columns.map((c) => `  ${c.column}: ${c.sealed} sealed, ${c.underNewestKey} under the newest key`),
      ];
      return { json, text: lines.join('\n') };
    },

    /** Exits 1 (an AppError) when a value could not be opened: the key check then stays where it is. */
    async reEncrypt(batchSize: number) {
      const report = await reEncryptAll(deps.em, deps.keys, batchSize).catch((error: unknown) => {
        // A key ring that cannot open the database: the same refusal as at start, as a command error.
        throw error instanceof ConfigError ? new AppError('conflict', error.problems.join('\n')) : error;
      });
      const columns = report.columns.map((c) => ({ column: c.column, re_encrypted: c.reEncrypted, failed: c.failed.length }));
      const summary = report.columns.map((c) => `  ${c.column}: ${c.reEncrypted} re-encrypted, ${c.failed.length} failed`);
      if (!report.complete) {
        const failures = report.columns.flatMap((c) => c.failed.map((f) => `  ${c.column} ${f.id}: ${f.reason}`));
        throw new AppError(
          'unprocessable_entity',
          [
            `re-encryption under ${report.keyId} left values it could not open; keep the older keys until they are fixed:`,
            ...summary,
            ...failures,
          ].join('\n'),
          { columns },
        );
      }
      return {
        json: { key_id: report.keyId, complete: true, columns },
        text: [`every sealed value is under ${report.keyId}; the older keys can be dropped:`, ...summary].join('\n'),
      };
    },
  };
}
