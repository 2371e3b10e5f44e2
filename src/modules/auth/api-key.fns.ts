import { createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ApiKeyMode } from '../../../db/entities/index.ts';

/**
 * API key format: `hrld_<mode>_<id part><secret part>`, 40 base62 characters after the mode.
 * The first PREFIX_BODY_LENGTH of them, with the `hrld_<mode>_` head, form the stored lookup
 * prefix; the whole key is hashed with SHA-256 for the stored hash.
 */
const SERVICE = 'hrld';
const BODY_LENGTH = 40;
const PREFIX_BODY_LENGTH = 12;
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_PATTERN = new RegExp(`^${SERVICE}_(live|test)_([0-9A-Za-z]{${BODY_LENGTH}})$`);

function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // 248 = 62 * 4: reject the tail so every character is equally likely.
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

export interface GeneratedKey {
  key: string;
  prefix: string;
  secretHash: string;
}

export function generateApiKey(mode: ApiKeyMode): GeneratedKey {
  const key = `${SERVICE}_${mode}_${randomBase62(BODY_LENGTH)}`;
  return { key, prefix: keyPrefix(key), secretHash: hashApiKey(key) };
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** The lookup prefix of a well-formed key, or null when the key is malformed. */
export function parseApiKey(key: string): { mode: ApiKeyMode; prefix: string } | null {
  const match = KEY_PATTERN.exec(key);
  if (!match) return null;
  return { mode: match[1] as ApiKeyMode, prefix: keyPrefix(key) };
}

function keyPrefix(key: string): string {
  const head = key.indexOf('_', SERVICE.length + 1) + 1;
  return key.slice(0, head + PREFIX_BODY_LENGTH);
}

/** Constant-time comparison of a presented key against a stored SHA-256 hex digest. */
export function apiKeyMatches(key: string, storedHash: string): boolean {
  return apiKeyMatchesDigest(key, Buffer.from(storedHash, 'hex'));
}

/** apiKeyMatches against the stored digest's bytes (decoded once by a caller that keeps them). */
export function apiKeyMatchesDigest(key: string, storedDigest: Buffer): boolean {
  const presented = hash('sha256', key, 'buffer');
  return presented.length === storedDigest.length && timingSafeEqual(presented, storedDigest);
}
