import { defineEntity, p } from '@mikro-orm/core';

/**
 * Which encryption key this database's sealed values are under: one row (`name` = `secrets`),
 * written by the first process that starts with a key, moved to the newest key by
 * `herald admin encryption re-encrypt`. `sealedCheck` is a known text sealed under that key:
 * a process whose key ring cannot open it refuses to start. Not tenant-scoped: platform state.
 */
export const EncryptionKeyCheckSchema = defineEntity({
  name: 'EncryptionKeyCheck',
  tableName: 'encryption_key_checks',
  properties: {
    name: p.string().length(64).primary(),
    keyId: p.string().length(16),
    sealedCheck: p.text(),
    updatedAt: p.datetime(),
  },
});

export class EncryptionKeyCheck extends EncryptionKeyCheckSchema.class {}
EncryptionKeyCheckSchema.setClass(EncryptionKeyCheck);
