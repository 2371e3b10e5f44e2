import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDnsResolver } from '../../src/dns/resolver.ts';
import { createLogger } from '../../src/logger.ts';
import { createDirectRelay } from '../../src/modules/outbound/direct-relay.ts';
import type { Relay } from '../../src/modules/outbound/relay.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { startSourceRecordingSink } from '../support/source-recording-sink.ts';

/** Direct-to-MX delivery from an egress address: every connection to the MX leaves from it. */
describe('direct delivery from an egress source address', () => {
  let dns: TestDnsServer;
  let sink: Awaited<ReturnType<typeof startSourceRecordingSink>>;
  const relays: Relay[] = [];

  const relayFrom = (localAddress?: string) => {
    const relay = createDirectRelay({
      dns: createDnsResolver({ dns: { servers: [dns.address], timeoutMs: 2_000 } }),
      heloName: 'mta.herald.test',
      port: sink.port,
      poolSize: 1,
      ratePerMinute: 0,
      tls: { policy: 'none', source: 'host' },
      logger: createLogger('silent'),
      allowPrivateTargets: true,
      ...(localAddress ? { localAddress } : {}),
    });
    relays.push(relay);
    return relay;
  };
  const send = (relay: Relay, n: number) =>
    relay.send(
      { from: 'shop@shop.test', to: 'someone@dest.test', subject: 'Hi', text: 'Hello', messageId: `<egress-${n}@shop.test>` },
      { from: 'bounce@shop.test', to: ['someone@dest.test'] },
    );

  beforeAll(async () => {
    sink = await startSourceRecordingSink();
    dns = await startDnsServer({ 'dest.test': { MX: [{ exchange: 'mx.dest.test', priority: 10 }] }, 'mx.dest.test': { A: ['127.0.0.1'] } });
  });
  afterAll(async () => {
    for (const relay of relays) relay.close();
    await sink?.close();
    await dns?.close();
  });

  it('connects from the given address, reusing its own connections, and from the default one without', async () => {
    const fromTwo = relayFrom('127.0.0.2');
    const fromThree = relayFrom('127.0.0.3');
    const plain = relayFrom();
    const sent = [await send(fromTwo, 1), await send(fromThree, 2), await send(fromTwo, 3), await send(plain, 4)];
    expect(sent.map((result) => result.kind)).toEqual(['recipients', 'recipients', 'recipients', 'recipients']);
    expect(await sink.sourceOf('egress-1@shop.test')).toBe('127.0.0.2');
    expect(await sink.sourceOf('egress-2@shop.test')).toBe('127.0.0.3');
    expect(await sink.sourceOf('egress-3@shop.test')).toBe('127.0.0.2');
    expect(await sink.sourceOf('egress-4@shop.test')).toBe('127.0.0.1');
  });
});
