import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { redactPath } from '../../src/http/redact-path.ts';
import { normalizeAddress, parseTrustedProxies, resolveClient, type TrustedProxies } from '../../src/http/trusted-proxies.ts';

const proxies = (text: string): TrustedProxies => {
  const parsed = parseTrustedProxies(text);
  if (typeof parsed === 'string') throw new Error(parsed);
  return parsed;
};
const request = (peer: string, forwardedFor = '', forwardedProto = '', encrypted = false) => ({
  peer,
  forwardedFor,
  forwardedProto,
  encrypted,
});

describe('TRUSTED_PROXIES: parsing', () => {
  it('takes addresses and CIDR ranges of both families, and nothing for an empty list', () => {
    const trusted = proxies(' 10.0.0.0/8, 192.0.2.7 ,fd00::/8, ::1');
    for (const address of ['10.1.2.3', '192.0.2.7', '::ffff:10.9.9.9', 'fd12::1', '::1'])
      expect(trusted.trusts(address), address).toBe(true);
    for (const address of ['11.0.0.1', '192.0.2.8', 'fe80::1', '127.0.0.1', 'not an address', ''])
      expect(trusted.trusts(address), address).toBe(false);
    expect(proxies('').trusts('127.0.0.1')).toBe(false);
  });

  it('names the entry that is not an address or range', () => {
    expect(parseTrustedProxies('10.0.0.0/33')).toMatch(/10\.0\.0\.0\/33/);
    expect(parseTrustedProxies('10.0.0.1, proxy.internal')).toMatch(/proxy\.internal/);
    expect(parseTrustedProxies('::1/129')).toMatch(/prefix/);
    expect(parseTrustedProxies('10.0.0.0/x')).toMatch(/prefix/);
    expect(() => loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8, nope' })).toThrow(/TRUSTED_PROXIES/);
    expect(loadConfig({ TRUSTED_PROXIES: ' 10.0.0.0/8 , ::1 ' }).http.trustedProxies).toEqual(['10.0.0.0/8', '::1']);
    expect(loadConfig({}).http.trustedProxies).toEqual([]);
  });

  it('reads an address in the forms proxies write', () => {
    expect(normalizeAddress('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(normalizeAddress('203.0.113.9:51234')).toBe('203.0.113.9');
    expect(normalizeAddress('[2001:db8::1]:443')).toBe('2001:db8::1');
    expect(normalizeAddress('unknown')).toBeNull();
  });
});

describe('TRUSTED_PROXIES: the real client', () => {
  const trusted = proxies('10.0.0.0/8');

  it('ignores forwarded headers from a peer that is not a trusted proxy', () => {
    expect(resolveClient(request('203.0.113.9', '198.51.100.1', 'https'), trusted)).toEqual({ address: '203.0.113.9', scheme: 'http' });
    expect(resolveClient(request('::ffff:203.0.113.9', '198.51.100.1', 'http', true), trusted)).toEqual({
      address: '203.0.113.9',
      scheme: 'https',
    });
    expect(resolveClient(request('10.0.0.2', '198.51.100.1', 'https'), proxies(''))).toEqual({ address: '10.0.0.2', scheme: 'http' });
  });

  it('takes the right-most address that is not a trusted proxy, whatever the client put on the left', () => {
    expect(resolveClient(request('10.0.0.2', '198.51.100.1'), trusted).address).toBe('198.51.100.1');
    expect(resolveClient(request('10.0.0.2', '1.1.1.1, 2.2.2.2, 198.51.100.1, 10.0.0.3'), trusted).address).toBe('198.51.100.1');
    expect(resolveClient(request('10.0.0.2', 'garbage, 198.51.100.1:4000'), trusted).address).toBe('198.51.100.1');
  });

  it('stops at the last trusted proxy when what lies beyond it is no address, and without a header takes the peer', () => {
    expect(resolveClient(request('10.0.0.2', '198.51.100.1, unknown, 10.0.0.3'), trusted).address).toBe('10.0.0.3');
    expect(resolveClient(request('10.0.0.2', ''), trusted).address).toBe('10.0.0.2');
    expect(resolveClient(request('10.0.0.2', '10.0.0.5, 10.0.0.4'), trusted).address).toBe('10.0.0.5');
  });

  it('takes the scheme from the right-most X-Forwarded-Proto of a trusted proxy, http or https only', () => {
    expect(resolveClient(request('10.0.0.2', '', 'https'), trusted).scheme).toBe('https');
    expect(resolveClient(request('10.0.0.2', '', 'https, http'), trusted).scheme).toBe('http');
    expect(resolveClient(request('10.0.0.2', '', 'HTTPS'), trusted).scheme).toBe('https');
    expect(resolveClient(request('10.0.0.2', '', 'gopher'), trusted).scheme).toBe('http');
    expect(resolveClient(request('10.0.0.2', '', '', true), trusted).scheme).toBe('https');
  });
});

describe('log lines: one-use tokens in paths', () => {
  it('redacts sign-in link, invitation, unsubscribe and tracking tokens, and drops the query string', () => {
    expect(redactPath('/dashboard/sign-in/abcDEF123_-')).toBe('/dashboard/sign-in/[redacted]');
    expect(redactPath('/dashboard/invite/abcDEF123')).toBe('/dashboard/invite/[redacted]');
    expect(redactPath('/unsubscribe/tok.en')).toBe('/unsubscribe/[redacted]');
    expect(redactPath('/t/o/tok.gif')).toBe('/t/o/[redacted]');
    expect(redactPath('/t/c/tok?u=https://x.example')).toBe('/t/c/[redacted]');
    expect(redactPath('/uploads/att_1?expires=1&sig=abcdef')).toBe('/uploads/att_1');
    expect(redactPath('/dashboard/sign-in')).toBe('/dashboard/sign-in');
    expect(redactPath('/api/v1/contacts/con_1')).toBe('/api/v1/contacts/con_1');
  });
});
