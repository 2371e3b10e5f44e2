import { type CommandGroup, integer, json, UsageError } from './options.ts';

/** The encryption key ring: status and re-encryption under the newest key. */
export const encryptionCommands: CommandGroup = (svc) => ({
  'encryption status': {
    usage: 'encryption status   (key ids of the ring, the key the database is checked against, sealed values per place)',
    options: { ...json },
    async run() {
      return svc().encryption.status();
    },
  },
  'encryption re-encrypt': {
    usage: 'encryption re-encrypt [--batch-size N]   (every sealed value under the newest key; resumable)',
    options: { ...json, 'batch-size': { type: 'string' } },
    async run(values) {
      const batchSize = integer(values, 'batch-size') ?? 500;
      if (batchSize < 1) throw new UsageError('--batch-size must be at least 1');
      return svc().encryption.reEncrypt(batchSize);
    },
  },
});
