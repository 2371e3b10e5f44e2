import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createCipheriv } from 'node:crypto';
import { decryptSecret, encryptSecret, keyId, sealedKeyId } from '../../src/crypto/secret-box.ts';

describe('secret box (AES-256-GCM)', () => {
  const key = randomBytes(32);

  it('round-trips and never repeats a ciphertext', () => {
    const a = encryptSecret(key, 'whsec_secret');
    const b = encryptSecret(key, 'whsec_secret');
    expect(a).toMatch(new RegExp(`^enc:v2:${keyId(key)}:`));
    expect(sealedKeyId(a)).toBe(keyId(key));
    expect(a).not.toBe(b);
    expect(a).not.toContain('whsec_secret');
    expect(decryptSecret(key, a)).toBe('whsec_secret');
  });

  it('refuses a tampered ciphertext and the wrong key', () => {
    const sealed = encryptSecret(key, 'private key');
    const parts = sealed.split(':');
    const body = Buffer.from(parts[5]!, 'base64');
    body[0] = body[0]! ^ 1;
    parts[5] = body.toString('base64');
    expect(() => decryptSecret(key, parts.join(':'))).toThrow();
    expect(() => decryptSecret(randomBytes(32), sealed)).toThrow();
    expect(() => decryptSecret(key, 'plain text')).toThrow(/not an encrypted secret/);
  });

  it('requires a 32-byte key', () => {
    expect(() => encryptSecret(randomBytes(16), 'x')).toThrow(/32 bytes/);
  });

  it('opens with a key ring: the key the value names, and values of the first format with any key', () => {
    const older = randomBytes(32);
    const newest = randomBytes(32);
    expect(decryptSecret([newest, older], encryptSecret(older, 'dkim'))).toBe('dkim');
    expect(decryptSecret([newest, older], encryptSecret(newest, 'dkim'))).toBe('dkim');
    expect(() => decryptSecret([newest], encryptSecret(older, 'dkim'))).toThrow(
      `sealed under encryption key ${keyId(older)}, which is not configured`,
    );
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', older, nonce);
    const body = Buffer.concat([cipher.update('legacy', 'utf8'), cipher.final()]);
    const v1 = ['enc:v1', nonce.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(':');
    expect(sealedKeyId(v1)).toBeNull();
    expect(decryptSecret([newest, older], v1)).toBe('legacy');
    expect(() => decryptSecret([newest], v1)).toThrow(/not configured/);
  });
});
