import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { addressDailyCap, ADDRESS_WARMUP_PLAN, warmupDay } from '../../src/modules/egress/address-warmup-plan.ts';
import { checkEgressAddresses } from '../../src/modules/egress/bindable.ts';
import { nextUtcMidnight, poolFor } from '../../src/modules/egress/egress.fns.ts';
import { egressSettings, parseEgressPools, parseStreamPools } from '../../src/settings/egress-pools.ts';

const settings = (EGRESS_POOLS: string, EGRESS_DEFAULT_POOL = '', EGRESS_STREAM_POOLS = '') =>
  egressSettings({ EGRESS_POOLS, EGRESS_DEFAULT_POOL, EGRESS_STREAM_POOLS });

describe('EGRESS_POOLS', () => {
  it('parses named pools of addresses, IPv4 and IPv6, in their order', () => {
    expect(parseEgressPools(' bulk = 192.0.2.10, 192.0.2.11 ; tx=2001:db8::20 ')).toEqual({
      bulk: ['192.0.2.10', '192.0.2.11'],
      tx: ['2001:db8::20'],
    });
    expect(parseEgressPools('')).toEqual({});
  });

  it.each([
    ['bulk', '"bulk" is not name=address,address'],
    ['Bulk=192.0.2.1', '"Bulk" is not a pool name (lower-case letters, digits, - and _; at most 63)'],
    ['bulk=', 'pool "bulk" has no address'],
    ['bulk=192.0.2.300', 'pool "bulk": "192.0.2.300" is not an IPv4 or IPv6 address'],
    ['bulk=mail.example.com', 'pool "bulk": "mail.example.com" is not an IPv4 or IPv6 address'],
    ['bulk=192.0.2.1,192.0.2.1', 'pool "bulk" lists an address twice'],
    ['bulk=192.0.2.1;bulk=192.0.2.2', 'pool "bulk" is defined twice'],
  ])('refuses %j: %s', (text, problem) => {
    expect(parseEgressPools(text)).toBe(problem);
  });

  it('refuses a default or stream pool that is not defined, naming the setting', () => {
    expect(settings('bulk=192.0.2.1', 'tx')).toEqual(['EGRESS_DEFAULT_POOL: no pool "tx" in EGRESS_POOLS']);
    expect(settings('bulk=192.0.2.1', '', 'broadcast=mass')).toEqual([
      'EGRESS_STREAM_POOLS: stream "broadcast" names pool "mass", which EGRESS_POOLS does not define',
    ]);
    expect(parseStreamPools('broadcast')).toBe('"broadcast" is not stream=pool');
  });

  it('stops the configuration loading with the problem', () => {
    expect(() => loadConfig({ EGRESS_POOLS: 'bulk=not-an-ip' })).toThrow(ConfigError);
    expect(() => loadConfig({ EGRESS_POOLS: 'bulk=192.0.2.1', EGRESS_DEFAULT_POOL: 'tx' })).toThrow(/EGRESS_DEFAULT_POOL: no pool "tx"/);
    expect(loadConfig({ EGRESS_POOLS: 'bulk=192.0.2.1', EGRESS_STREAM_POOLS: 'broadcast=bulk' }).egress).toEqual({
      pools: { bulk: ['192.0.2.1'] },
      defaultPool: null,
      streamPools: { broadcast: 'bulk' },
    });
  });
});

describe('poolFor', () => {
  const config = settings('bulk=192.0.2.1;tx=192.0.2.2;own=192.0.2.3', 'tx', 'broadcast=bulk');
  if (Array.isArray(config)) throw new Error(config.join('; '));

  it("takes the domain's pool first, then the stream's, then the default", () => {
    expect(poolFor(config, { ipPool: 'own' }, 'broadcast')).toBe('own');
    expect(poolFor(config, { ipPool: null }, 'broadcast')).toBe('bulk');
    expect(poolFor(config, { ipPool: null })).toBe('tx');
    expect(poolFor(config, { ipPool: null }, 'transactional')).toBe('tx');
  });

  it('ignores a domain pool the operator no longer defines, and has no pool without pools', () => {
    expect(poolFor(config, { ipPool: 'removed' })).toBe('tx');
    const none = settings('');
    if (Array.isArray(none)) throw new Error(none.join('; '));
    expect(poolFor(none, { ipPool: null }, 'broadcast')).toBeNull();
  });
});

describe('the address warm-up plan', () => {
  it("follows Resend's new-domain days (150 on day 1, 2,000 on day 7), then rises to no cap", () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((day) => addressDailyCap(day))).toEqual([150, 250, 400, 700, 1_000, 1_500, 2_000]);
    expect(addressDailyCap(ADDRESS_WARMUP_PLAN.length)).toBe(50_000);
    expect(addressDailyCap(ADDRESS_WARMUP_PLAN.length + 1)).toBeNull();
  });

  it('counts warm-up days from the first UTC day the address carried mail', () => {
    expect(warmupDay('2026-11-27', '2026-11-27')).toBe(1);
    expect(warmupDay('2026-11-27', '2026-12-03')).toBe(7);
    expect(nextUtcMidnight(new Date('2026-11-27T23:59:59.500Z')).toISOString()).toBe('2026-11-28T00:00:00.000Z');
  });
});

describe('checkEgressAddresses', () => {
  it('accepts addresses of this host (all of 127.0.0.0/8 is loopback)', async () => {
    await expect(checkEgressAddresses(['127.0.0.2', '127.0.0.3'])).resolves.toBeUndefined();
  });

  it('refuses an address the host does not have, naming it', async () => {
    await expect(checkEgressAddresses(['127.0.0.2', '192.0.2.10'])).rejects.toThrow(
      /EGRESS_POOLS: these source addresses cannot be bound on this host .*192\.0\.2\.10: EADDRNOTAVAIL/,
    );
  });
});
