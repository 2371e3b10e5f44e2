import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { DomainStatus } from '../../db/entities/index.ts';
import type { DnsLookup } from '../../src/dns/resolver.ts';
import { dkimDnsValue } from '../../src/modules/domains/dkim.fns.ts';
import {
  deliverabilityRecords,
  evaluateRecords,
  expectedRecords,
  nextDomainStatus,
  type DnsAnswers,
  type RecordChecks,
  type RecordStatus,
} from '../../src/modules/domains/deliverability.fns.ts';

const pem = (bits: number) =>
  generateKeyPairSync('rsa', {
    modulusLength: bits,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  }).publicKey;
const publicKey = pem(1024);
const otherKey = pem(1024);
const domain = { domain: 'acme.example', dkimSelector: 'herald', dkimPublicKey: publicKey };
const settings = { spfInclude: 'SPF.Herald.Example', bounceDomain: 'bounces.herald.example.' };
const keyData = dkimDnsValue(publicKey).split('p=')[1]!;

const found = (...records: string[]): DnsLookup<string> => ({ status: 'found', records });
const none: DnsLookup<string> = { status: 'none' };
const unreachable: DnsLookup<string> = { status: 'unreachable', error: 'ETIMEOUT' };
const published: DnsAnswers = {
  spf: found('google-site-verification=abc', 'v=spf1 include:spf.herald.example ~all'),
  dkim: found(dkimDnsValue(publicKey)),
  dmarc: found('v=DMARC1; p=quarantine; rua=mailto:d@acme.example'),
  return_path: found('bounces.herald.example'),
};

describe('expectedRecords', () => {
  it('names what to publish, from the domain and the operator settings', () => {
    expect(expectedRecords(domain, settings)).toEqual({
      spf: { type: 'TXT', name: 'acme.example', value: 'v=spf1 include:spf.herald.example ~all', required: true },
      dkim: { type: 'TXT', name: 'herald._domainkey.acme.example', value: `v=DKIM1; k=rsa; p=${keyData}`, required: true },
      dmarc: { type: 'TXT', name: '_dmarc.acme.example', value: 'v=DMARC1; p=none', required: false },
      return_path: { type: 'CNAME', name: 'bounces.acme.example', value: 'bounces.herald.example', required: true },
    });
  });
});

describe('evaluateRecords', () => {
  it('verifies every record when all are published', () => {
    const checks = evaluateRecords(domain, settings, published);
    expect(checks).toEqual({
      spf: { status: 'verified', found: 'v=spf1 include:spf.herald.example ~all' },
      dkim: { status: 'verified', found: dkimDnsValue(publicKey) },
      dmarc: { status: 'verified', found: 'v=DMARC1; p=quarantine; rua=mailto:d@acme.example' },
      return_path: { status: 'verified', found: 'bounces.herald.example' },
    });
  });

  const withSpf = (...r: string[]) => ({ ...published, spf: found(...r) });
  const withDkim = (...r: string[]) => ({ ...published, dkim: found(...r) });
  const withDmarc = (...r: string[]) => ({ ...published, dmarc: found(...r) });
  it.each<[string, DnsAnswers, 'spf' | 'dkim' | 'dmarc' | 'return_path', RecordStatus, string | null]>([
    [
      'SPF: + qualifier and other mechanisms',
      withSpf('v=spf1 ip4:192.0.2.1 +include:SPF.herald.example -all'),
      'spf',
      'verified',
      'v=spf1 ip4:192.0.2.1 +include:SPF.herald.example -all',
    ],
    ['SPF: no v=spf1 record among TXT', withSpf('google-site-verification=abc'), 'spf', 'missing', null],
    ['SPF: without the include', withSpf('v=spf1 include:_spf.google.com ~all'), 'spf', 'mismatch', 'v=spf1 include:_spf.google.com ~all'],
    [
      'SPF: include with a fail qualifier',
      withSpf('v=spf1 -include:spf.herald.example ~all'),
      'spf',
      'mismatch',
      'v=spf1 -include:spf.herald.example ~all',
    ],
    [
      'SPF: a prefix of the include host',
      withSpf('v=spf1 include:spf.herald.example.evil ~all'),
      'spf',
      'mismatch',
      'v=spf1 include:spf.herald.example.evil ~all',
    ],
    [
      'SPF: two records (permerror)',
      withSpf('v=spf1 include:spf.herald.example ~all', 'v=spf1 -all'),
      'spf',
      'mismatch',
      'v=spf1 include:spf.herald.example ~all\nv=spf1 -all',
    ],
    ['SPF: no TXT at all', { ...published, spf: none }, 'spf', 'missing', null],
    [
      'DKIM: key with folded whitespace',
      withDkim(`v=DKIM1; k=rsa; p=${keyData.slice(0, 50)} ${keyData.slice(50)}`),
      'dkim',
      'verified',
      `v=DKIM1; k=rsa; p=${keyData.slice(0, 50)} ${keyData.slice(50)}`,
    ],
    ['DKIM: another key', withDkim(dkimDnsValue(otherKey)), 'dkim', 'mismatch', dkimDnsValue(otherKey)],
    ['DKIM: revoked (empty p=)', withDkim('v=DKIM1; p='), 'dkim', 'mismatch', 'v=DKIM1; p='],
    ['DKIM: absent', { ...published, dkim: none }, 'dkim', 'missing', null],
    ['DMARC: absent', { ...published, dmarc: none }, 'dmarc', 'missing', null],
    ['DMARC: not first tag', withDmarc('p=none; v=DMARC1'), 'dmarc', 'missing', null],
    ['DMARC: lower-case version value', withDmarc('v=dmarc1; p=none'), 'dmarc', 'missing', null],
    [
      'DMARC: two records',
      withDmarc('v=DMARC1; p=none', 'v=DMARC1; p=reject'),
      'dmarc',
      'mismatch',
      'v=DMARC1; p=none\nv=DMARC1; p=reject',
    ],
    [
      'return path: another target',
      { ...published, return_path: found('bounces.elsewhere.example.') },
      'return_path',
      'mismatch',
      'bounces.elsewhere.example',
    ],
    [
      'return path: upper case and trailing dot',
      { ...published, return_path: found('BOUNCES.herald.example.') },
      'return_path',
      'verified',
      'bounces.herald.example',
    ],
    ['return path: DNS unreachable', { ...published, return_path: unreachable }, 'return_path', 'unknown', null],
  ])('%s', (_name, answers, key, status, foundValue) => {
    expect(evaluateRecords(domain, settings, answers)[key]).toEqual({ status, found: foundValue });
  });
});

describe('nextDomainStatus', () => {
  const checks = (spf: RecordStatus, dkim: RecordStatus, returnPath: RecordStatus, dmarc: RecordStatus = 'missing'): RecordChecks => ({
    spf: { status: spf, found: null },
    dkim: { status: dkim, found: null },
    dmarc: { status: dmarc, found: null },
    return_path: { status: returnPath, found: null },
  });
  it.each<[DomainStatus, RecordChecks, DomainStatus]>([
    ['pending', checks('verified', 'verified', 'verified'), 'verified'],
    ['pending', checks('verified', 'missing', 'verified', 'verified'), 'pending'],
    ['pending', checks('unknown', 'unknown', 'unknown'), 'pending'],
    ['verified', checks('verified', 'verified', 'verified', 'missing'), 'verified'],
    ['verified', checks('verified', 'mismatch', 'verified', 'verified'), 'attention'],
    ['verified', checks('missing', 'unknown', 'unknown'), 'attention'],
    ['verified', checks('unknown', 'unknown', 'unknown'), 'verified'],
    ['verified', checks('verified', 'unknown', 'verified'), 'verified'],
    ['attention', checks('verified', 'verified', 'verified'), 'verified'],
    ['attention', checks('verified', 'verified', 'missing'), 'attention'],
    ['attention', checks('unknown', 'unknown', 'unknown'), 'attention'],
  ])('%s with %j → %s', (current, result, next) => {
    expect(nextDomainStatus(current, result)).toBe(next);
  });
});

describe('deliverabilityRecords', () => {
  it('is unknown before any check and ignores malformed stored checks', () => {
    const records = deliverabilityRecords(
      { ...domain, dnsCheck: { spf: { status: 'bogus' }, dkim: 'x', dmarc: { status: 'missing', found: 42 } } },
      settings,
    );
    expect(records.spf).toMatchObject({ status: 'unknown', found: null, type: 'TXT' });
    expect(records.dkim).toMatchObject({ status: 'unknown', found: null });
    expect(records.dmarc).toMatchObject({ status: 'missing', found: null });
    expect(records.return_path).toMatchObject({ status: 'unknown', found: null, value: 'bounces.herald.example' });
  });
});
