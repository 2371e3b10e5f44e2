import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Secrets at rest (webhook signing secrets, DKIM private keys): AES-256-GCM with a random
 * 96-bit nonce, stored as `enc:v1:<nonce>:<tag>:<ciphertext>` (base64 parts).
 */
const VERSION = 'enc:v1';

export function encryptSecret(key: Buffer, plaintext: string): string {
  if (key.length !== 32) throw new Error('encryption key must be 32 bytes');
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [VERSION, nonce.toString('base64'), tag.toString('base64'), ciphertext.toString('base64')].join(':');
}

export function decryptSecret(key: Buffer, sealed: string): string {
  const parts = sealed.split(':');
  if (parts.length !== 5 || `${parts[0]}:${parts[1]}` !== VERSION) {
    throw new Error('not an encrypted secret');
  }
  const [, , nonce = '', tag = '', ciphertext = ''] = parts;
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(nonce, 'base64'));
  decipher.setAuthTag(Buffer.from(tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64')), decipher.final()]).toString('utf8');
}
