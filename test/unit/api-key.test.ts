import { describe, expect, it } from 'vitest';
import { apiKeyMatches, generateApiKey, hashApiKey, parseApiKey } from '../../src/modules/auth/api-key.fns.ts';

describe('API keys', () => {
  it.each(['live', 'test'] as const)('generates %s keys with the service prefix', (mode) => {
    const { key, prefix, secretHash } = generateApiKey(mode);
    expect(key).toMatch(new RegExp(`^hrld_${mode}_[0-9A-Za-z]{40}$`));
    expect(key.startsWith(prefix)).toBe(true);
    expect(prefix).toHaveLength(`hrld_${mode}_`.length + 12);
    expect(secretHash).toBe(hashApiKey(key));
    expect(secretHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('never generates the same key twice', () => {
    const keys = new Set(Array.from({ length: 500 }, () => generateApiKey('test').key));
    expect(keys.size).toBe(500);
  });

  it('parses well-formed keys and rejects malformed ones', () => {
    const { key, prefix } = generateApiKey('live');
    expect(parseApiKey(key)).toEqual({ mode: 'live', prefix });
    for (const bad of [
      '',
      'hrld_live_',
      key.slice(0, -1),
      `${key}x`,
      key.replace('hrld', 'sk'),
      key.replace('live', 'prod'),
      `${key.slice(0, -1)}!`,
    ]) {
      expect(parseApiKey(bad)).toBeNull();
    }
  });

  it('matches only the exact key against the stored hash', () => {
    const { key, secretHash } = generateApiKey('test');
    expect(apiKeyMatches(key, secretHash)).toBe(true);
    const other = key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a');
    expect(apiKeyMatches(other, secretHash)).toBe(false);
    expect(apiKeyMatches(key, 'abcd')).toBe(false);
  });
});
