import { describe, expect, it } from 'vitest';
import { mxMatches, parseMtaStsPolicy } from '../../src/modules/outbound/mta-sts.ts';

describe('MTA-STS policy rules (RFC 8461)', () => {
  it('parses a policy with CRLF or LF lines, several mx patterns, and caps max_age at a year', () => {
    expect(
      parseMtaStsPolicy('version: STSv1\r\nmode: enforce\r\nmx: mail.example.com\r\nmx: *.Example.NET.\r\nmax_age: 604800\r\n'),
    ).toEqual({
      mode: 'enforce',
      mx: ['mail.example.com', '*.example.net'],
      maxAgeSeconds: 604_800,
    });
    expect(parseMtaStsPolicy('version: STSv1\nmode: testing\nmx: a.example\nmax_age: 99999999999\n')).toMatchObject({
      mode: 'testing',
      maxAgeSeconds: 31_557_600,
    });
    expect(parseMtaStsPolicy('version: STSv1\nmode: none\nmax_age: 86400\n')).toMatchObject({ mode: 'none', mx: [] });
  });

  it.each([
    ['version: STSv2\nmode: enforce\nmx: a\nmax_age: 1', 'version'],
    ['version: STSv1\nmode: strict\nmx: a\nmax_age: 1', 'mode'],
    ['version: STSv1\nmode: enforce\nmx: a\nmax_age: soon', 'max_age'],
    ['version: STSv1\nmode: enforce\nmax_age: 1', 'mx'],
    ['<html>not a policy</html>', 'version'],
  ])('refuses %j (%s)', (text, field) => {
    expect(parseMtaStsPolicy(text)).toEqual(expect.stringContaining(field));
  });

  it('matches MX host names exactly, or one leftmost label under a wildcard', () => {
    expect(mxMatches('mail.example.com', 'MAIL.example.com.')).toBe(true);
    expect(mxMatches('mail.example.com', 'mx.example.com')).toBe(false);
    expect(mxMatches('*.example.com', 'mx1.example.com')).toBe(true);
    expect(mxMatches('*.example.com', 'a.b.example.com')).toBe(false);
    expect(mxMatches('*.example.com', 'example.com')).toBe(false);
    expect(mxMatches('*.example.com', 'badexample.com')).toBe(false);
  });
});
