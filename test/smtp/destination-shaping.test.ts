import { randomBytes } from 'node:crypto';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDnsResolver } from '../../src/dns/resolver.ts';
import { freePort } from '../../src/dev/ports.ts';
import { createLogger } from '../../src/logger.ts';
import { createDirectRelay } from '../../src/modules/outbound/direct-relay.ts';
import type { Relay } from '../../src/modules/outbound/relay.ts';
import { createDestinationShaper, type DestinationShapingSettings } from '../../src/modules/outbound/shaping/destination-shaper.ts';
import { createRedis } from '../../src/redis/client.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';

const logger = createLogger('silent');
const SETTINGS: DestinationShapingSettings = { connections: 4, ratePerMinute: 0, backoff: { baseMs: 60_000, maxMs: 600_000 } };

/** A remote MX on a 127.0.0.x address counting its connections; with `refuse`, every connection is answered 421. */
async function startSink(host: string, port: number, options: { refuse?: boolean } = {}) {
  const accepted: string[] = [];
  let connections = 0;
  const server = new SMTPServer({
    authOptional: true,
    disableReverseLookup: true,
    hideSTARTTLS: true,
    closeTimeout: 200,
    onConnect(_session, callback) {
      connections += 1;
      if (options.refuse) callback(Object.assign(new Error('4.7.0 too many connections, try again later'), { responseCode: 421 }));
      else callback();
    },
    onData(stream, session, callback) {
      stream.on('data', () => {});
      stream.on('end', () => {
        accepted.push(...session.envelope.rcptTo.map((r) => r.address));
        callback();
      });
    },
  });
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return {
    accepted,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A shaper on its own Redis connection, as each worker process has; with `ready`, once that connection is up. */
async function shaperOn(keyPrefix: string, options: { url?: string; ready?: boolean } = {}) {
  const redis = createRedis({ redis: { url: options.url ?? inject('redisUrl'), keyPrefix } }, logger);
  if (options.ready !== false) await new Promise((resolve) => redis.once('ready', resolve));
  return createDestinationShaper({ redis, settings: SETTINGS, logger });
}

describe('per-destination shaping shared through Redis', () => {
  it('two shapers (two worker processes) share one destination’s connections and its back-off', async () => {
    const prefix = `test-shape-${randomBytes(4).toString('hex')}:`;
    const first = await shaperOn(prefix);
    const second = await shaperOn(prefix);
    try {
      const slots = await Promise.all([
        first.acquire('google'),
        first.acquire('google'),
        second.acquire('google'),
        second.acquire('google'),
      ]);
      expect(slots.map((slot) => slot.kind)).toEqual(['granted', 'granted', 'granted', 'granted']);
      expect(await second.acquire('google')).toMatchObject({ kind: 'wait', backingOff: false });
      expect(await second.acquire('example.org')).toMatchObject({ kind: 'granted' });

      const [refused] = slots;
      if (refused?.kind !== 'granted') throw new Error('no slot');
      refused.release('temporary');
      // The release is not awaited by delivery; the other process sees it once Redis has run it.
      let seen = await second.acquire('google');
      for (let i = 0; i < 20 && !(seen.kind === 'wait' && seen.backingOff); i += 1) seen = await second.acquire('google');
      expect(seen).toMatchObject({ kind: 'wait', backingOff: true });
      expect(seen.kind === 'wait' && seen.retryInMs).toBeGreaterThan(50_000);
      expect(await first.acquire('google')).toMatchObject({ kind: 'wait', backingOff: true });
      expect(await first.acquire('yahoo')).toMatchObject({ kind: 'granted' });
    } finally {
      first.close();
      second.close();
    }
  });

  it('keeps delivering on per-worker limits when Redis does not answer', async () => {
    const closed = await freePort();
    const shaper = await shaperOn('test-shape-down:', { url: `redis://127.0.0.1:${closed}`, ready: false });
    try {
      const slots = await Promise.all(Array.from({ length: 5 }, () => shaper.acquire('google')));
      expect(slots.map((slot) => slot.kind)).toEqual(['granted', 'granted', 'granted', 'granted', 'wait']);
    } finally {
      shaper.close();
    }
  });
});

/**
 * Direct delivery with shaping, over loopback: refusing.test's MX answers 421 to every
 * connection, accepting.test's MX takes everything; both are sent to at once.
 */
describe('direct delivery with per-destination shaping (DNS and MX hosts on loopback)', () => {
  let dns: TestDnsServer;
  let refusing: Awaited<ReturnType<typeof startSink>>;
  let accepting: Awaited<ReturnType<typeof startSink>>;
  let relay: Relay;

  beforeAll(async () => {
    const port = await freePort();
    refusing = await startSink('127.0.0.21', port, { refuse: true });
    accepting = await startSink('127.0.0.22', port);
    dns = await startDnsServer({
      'refusing.test': { MX: [{ exchange: 'mx.refusing.test', priority: 10 }] },
      'mx.refusing.test': { A: ['127.0.0.21'] },
      'accepting.test': { MX: [{ exchange: 'mx.accepting.test', priority: 10 }] },
      'mx.accepting.test': { A: ['127.0.0.22'] },
    });
    relay = createDirectRelay({
      dns: createDnsResolver({ dns: { servers: [dns.address], timeoutMs: 1_000 } }),
      heloName: 'herald.test',
      port,
      poolSize: 2,
      ratePerMinute: 0,
      tls: { policy: 'none', source: 'host' },
      mtaSts: null,
      allowPrivateTargets: true,
      shaper: await shaperOn(`test-shape-${randomBytes(4).toString('hex')}:`),
      logger,
    });
  });

  afterAll(async () => {
    relay.close();
    await Promise.all([refusing.close(), accepting.close(), dns.close()]);
  });

  const send = (to: string) =>
    relay.send({ from: 'sender@herald.test', to, subject: 'shaping', text: 'hello' }, { from: 'bounce@herald.test', to: [to] });

  it('defers the refusing destination alone and backs it off, while the other keeps delivering', async () => {
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => [send(`r${i}@refusing.test`), send(`a${i}@accepting.test`)]).flat(),
    );
    const answers = results.map((result) => (result.kind === 'recipients' ? result.recipients[0] : null));
    const toAccepting = answers.filter((answer) => answer?.email.endsWith('@accepting.test'));
    const toRefusing = answers.filter((answer) => answer?.email.endsWith('@refusing.test'));

    expect(
      toAccepting.every((answer) => answer?.accepted),
      JSON.stringify(toAccepting),
    ).toBe(true);
    expect(accepting.accepted).toHaveLength(30);
    // Every refusing.test recipient is deferred (a temporary answer, retried later), none bounced.
    expect(
      toRefusing.every((answer) => answer && !answer.accepted && (answer.code ?? 400) < 500),
      JSON.stringify(toRefusing),
    ).toBe(true);
    // After its first refusals the destination backs off: later messages are deferred without a connection.
    expect(toRefusing.some((answer) => answer?.response?.includes('backing off'))).toBe(true);
    expect(refusing.connections()).toBeLessThan(30);

    const before = refusing.connections();
    const later = await send('later@refusing.test');
    expect(later.kind === 'recipients' && later.recipients[0]?.response).toContain('deferred by Herald: destination refusing.test');
    expect(refusing.connections()).toBe(before);
    const other = await send('later@accepting.test');
    expect(other.kind === 'recipients' && other.recipients[0]?.accepted).toBe(true);
  });
});
