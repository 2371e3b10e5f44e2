import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDnsResolver } from '../../src/dns/resolver.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';

describe('DNS resolver (through a loopback DNS server)', () => {
  let dns: TestDnsServer;
  let resolver: ReturnType<typeof createDnsResolver>;

  beforeAll(async () => {
    dns = await startDnsServer({
      'mx.example': { MX: [{ exchange: 'mail.mx.example', priority: 10 }] },
      'a-only.example': { A: ['192.0.2.10'] },
      'v6-only.example': { AAAA: ['2001:db8::1'] },
      'null-mx.example': { MX: [{ exchange: '', priority: 0 }], A: ['192.0.2.11'] },
      'txt.example': { TXT: ['v=spf1 include:herald.test ~all'] },
      'empty.example': {},
    });
    resolver = createDnsResolver({ dns: { servers: [dns.address], timeoutMs: 300 } });
  });
  afterAll(() => dns.close());

  it('finds records', async () => {
    expect(await resolver.mx('mx.example')).toMatchObject({ status: 'found', records: [{ exchange: 'mail.mx.example', priority: 10 }] });
    expect(await resolver.txt('txt.example')).toEqual({ status: 'found', records: ['v=spf1 include:herald.test ~all'] });
  });

  it('tells "no such record" apart from "no answer"', async () => {
    expect(await resolver.mx('nowhere.example')).toEqual({ status: 'none' });
    expect(await resolver.mx('empty.example')).toEqual({ status: 'none' });
    dns.setSilent(true);
    try {
      expect(await resolver.mx('mx.example')).toMatchObject({ status: 'unreachable' });
    } finally {
      dns.setSilent(false);
    }
  });

  it.each([
    ['mx.example', 'yes'],
    ['a-only.example', 'yes'],
    ['v6-only.example', 'yes'],
    ['null-mx.example', 'no'],
    ['empty.example', 'no'],
    ['nowhere.example', 'no'],
  ])('mail server for %s: %s', async (domain, expected) => {
    expect(await resolver.mailServer(domain)).toBe(expected);
  });

  it('answers unknown when DNS is unreachable', async () => {
    dns.setSilent(true);
    try {
      expect(await resolver.mailServer('mx.example')).toBe('unknown');
    } finally {
      dns.setSilent(false);
    }
  });
});
