import { hkdfSync, timingSafeEqual } from 'node:crypto';

/**
 * Keys for signed links and tokens (unsubscribe, tracking, upload URLs, VERP return paths,
 * pagination cursors), derived with HKDF-SHA256 from HERALD_ENCRYPTION_KEY under one label per use.
 * Given the key ring (newest first, HERALD_ENCRYPTION_KEY then the previous keys), the newest
 * key signs and every key of the ring verifies, so rotating the encryption key does not break
 * links already in recipients' mailboxes (docs/production.md, "Key rotation").
 */
export interface SigningKeys {
  /** The key that signs: derived from the newest key of the ring. */
  readonly signing: Buffer;
  /** Every derived key, newest first: a signature made under any of them verifies. */
  readonly verifying: readonly Buffer[];
}

/** One encryption key, or the ring newest first. */
export type KeyRing = Buffer | readonly Buffer[];

export function ringOf(keys: KeyRing): readonly Buffer[] {
  return Buffer.isBuffer(keys) ? [keys] : keys;
}

/** The keys of `label` derived from each key of the ring; an empty ring throws. */
export function deriveSigningKeys(keys: KeyRing, label: string): SigningKeys {
  const ring = ringOf(keys);
  if (ring.length === 0) throw new Error('no encryption key to derive signing keys from');
  const verifying = ring.map((key) => Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), label, 32)));
  return { signing: verifying[0]!, verifying };
}

/**
 * Whether `given` equals the MAC `macOf` computes under any verifying key. Every key is tried
 * (no early exit), each comparison in constant time, so the answer's timing does not tell which
 * key matched.
 */
export function matchesAny(keys: SigningKeys, given: Buffer, macOf: (key: Buffer) => Buffer): boolean {
  let matched = false;
  for (const key of keys.verifying) {
    const expected = macOf(key);
    if (expected.length === given.length && timingSafeEqual(expected, given)) matched = true;
  }
  return matched;
}
