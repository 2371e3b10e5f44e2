import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decryptSecret, encryptSecret } from '../../src/crypto/secret-box.ts';

describe('secret box (AES-256-GCM)', () => {
  const key = randomBytes(32);

  it('round-trips and never repeats a ciphertext', () => {
    const a = encryptSecret(key, 'whsec_secret');
    const b = encryptSecret(key, 'whsec_secret');
    expect(a).toMatch(/^enc:v1:/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('whsec_secret');
    expect(decryptSecret(key, a)).toBe('whsec_secret');
  });

  it('refuses a tampered ciphertext and the wrong key', () => {
    const sealed = encryptSecret(key, 'private key');
    const parts = sealed.split(':');
    const body = Buffer.from(parts[4]!, 'base64');
    body[0] = body[0]! ^ 1;
    parts[4] = body.toString('base64');
    expect(() => decryptSecret(key, parts.join(':'))).toThrow();
    expect(() => decryptSecret(randomBytes(32), sealed)).toThrow();
    expect(() => decryptSecret(key, 'plain text')).toThrow(/not an encrypted secret/);
  });

  it('requires a 32-byte key', () => {
    expect(() => encryptSecret(randomBytes(16), 'x')).toThrow(/32 bytes/);
  });
});
