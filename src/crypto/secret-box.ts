import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

/**
 * Secrets at rest (webhook signing secrets, DKIM private keys, sealed idempotent responses):
 * AES-256-GCM with a random 96-bit nonce, stored as `enc:v2:<key id>:<nonce>:<tag>:<ciphertext>`
 * (base64 parts). The key id names the key that sealed the value, so a key ring opens it with
 * the right key and re-encryption finds what is not under the newest key yet. Values of the
 * first format, `enc:v1:<nonce>:<tag>:<ciphertext>`, carry no key id and are tried with each key.
 */
const V1 = 'enc:v1';
const V2 = 'enc:v2';

/** The public name of a key: 16 hex digits of an HMAC under it (reveals nothing about the key). */
export function keyId(key: Buffer): string {
  return createHmac('sha256', key).update('herald encryption key id v1').digest('hex').slice(0, 16);
}

export function encryptSecret(key: Buffer, plaintext: string): string {
  if (key.length !== 32) throw new Error('encryption key must be 32 bytes');
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [V2, keyId(key), nonce.toString('base64'), tag.toString('base64'), ciphertext.toString('base64')].join(':');
}

/** The key id a sealed value names, or null for the first format (and for anything else). */
export function sealedKeyId(sealed: string): string | null {
  return sealed.startsWith(`${V2}:`) ? (sealed.split(':')[2] ?? null) : null;
}

function open(key: Buffer, nonce: string, tag: string, ciphertext: string): string {
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(nonce, 'base64'));
  decipher.setAuthTag(Buffer.from(tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64')), decipher.final()]).toString('utf8');
}

/**
 * Opens a sealed value with one key or a key ring (newest first). A value naming a key that
 * is not in the ring, or that does not open with it, throws.
 */
export function decryptSecret(keys: Buffer | readonly Buffer[], sealed: string): string {
  const ring = Buffer.isBuffer(keys) ? [keys] : keys;
  const parts = sealed.split(':');
  const version = `${parts[0]}:${parts[1]}`;
  if (version === V2 && parts.length === 6) {
    const [, , id = '', nonce = '', tag = '', ciphertext = ''] = parts;
    const key = ring.find((candidate) => keyId(candidate) === id);
    if (!key) throw new Error(`sealed under encryption key ${id}, which is not configured`);
    return open(key, nonce, tag, ciphertext);
  }
  if (version !== V1 || parts.length !== 5) throw new Error('not an encrypted secret');
  const [, , nonce = '', tag = '', ciphertext = ''] = parts;
  for (const key of ring) {
    try {
      return open(key, nonce, tag, ciphertext);
    } catch {
      // The next key of the ring may be the one.
    }
  }
  throw new Error('sealed under an encryption key that is not configured');
}
