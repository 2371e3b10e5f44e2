import { describe, expect, it } from 'vitest';
import type { MxRecord } from 'node:dns';
import type { DnsLookup } from '../../src/dns/resolver.ts';
import { resolveMailRoute } from '../../src/modules/outbound/direct-relay.ts';

type Zone = Record<string, { MX?: MxRecord[]; A?: string[]; AAAA?: string[] }>;

/** A scripted DNS: a name's records, or a definite "none". */
function scripted(zone: Zone) {
  const answer = <T>(records: T[] | undefined): Promise<DnsLookup<T>> =>
    Promise.resolve(records && records.length > 0 ? { status: 'found', records } : { status: 'none' });
  return {
    mx: (name: string) => answer(zone[name]?.MX),
    a: (name: string) => answer(zone[name]?.A),
    aaaa: (name: string) => answer(zone[name]?.AAAA),
  };
}

const dns = scripted({
  'inside.test': { MX: [{ exchange: 'mx.inside.test', priority: 10 }] },
  'mx.inside.test': { A: ['127.0.0.1', '169.254.169.254'], AAAA: ['::ffff:127.0.0.1', '::ffff:10.0.0.1', 'fe80::1'] },
  'mixed.test': {
    MX: [
      { exchange: 'mx1.mixed.test', priority: 10 },
      { exchange: 'mx2.mixed.test', priority: 20 },
    ],
  },
  'mx1.mixed.test': { A: ['10.0.0.25'] },
  'mx2.mixed.test': { A: ['192.0.2.25', '198.51.100.7', '8.8.8.8'], AAAA: ['2001:4860:4860::8888'] },
  // No MX: the implicit MX is the domain's own address.
  'implicit.test': { A: ['192.168.1.1'] },
});

/** Direct delivery's route to a domain's MX hosts, judged by the webhook address policy (src/net/address-policy.ts). */
describe('resolveMailRoute and the address policy', () => {
  it('has no route to a domain whose MX hosts have only forbidden addresses: temporary, saying which and why', async () => {
    const route = await resolveMailRoute(dns, 'inside.test');
    expect(route).toMatchObject({ kind: 'none', permanent: false });
    const response = route.kind === 'none' ? route.response : '';
    for (const refused of [
      '127.0.0.1] (loopback)',
      '169.254.169.254] (metadata)',
      '::ffff:127.0.0.1] (loopback)',
      '::ffff:10.0.0.1] (private)',
      'fe80::1] (link-local)',
    ]) {
      expect(response).toContain(`mx.inside.test [${refused}`);
    }
    expect(await resolveMailRoute(dns, 'implicit.test')).toMatchObject({
      kind: 'none',
      permanent: false,
      response: expect.stringContaining('implicit.test [192.168.1.1] (private)'),
    });
  });

  it('keeps only the allowed addresses of a domain with both kinds, in preference order', async () => {
    expect(await resolveMailRoute(dns, 'mixed.test')).toEqual({
      kind: 'hosts',
      hosts: [
        { name: 'mx2.mixed.test', address: '8.8.8.8' },
        { name: 'mx2.mixed.test', address: '2001:4860:4860::8888' },
      ],
    });
  });

  it('tries every address with allowPrivateTargets (SMTP_DIRECT_ALLOW_PRIVATE_TARGETS)', async () => {
    const route = await resolveMailRoute(dns, 'inside.test', { allowPrivateTargets: true });
    expect(route.kind === 'hosts' ? route.hosts.map((host) => host.address) : route).toEqual([
      '127.0.0.1',
      '169.254.169.254',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      'fe80::1',
    ]);
  });
});
