/**
 * Per-destination shaping (issue 36 item 4): does a refusing destination hold back the others?
 *
 * Direct delivery as the worker runs it (createDirectRelay with the Redis-shared destination
 * shaper, MX lookups through a DNS server on loopback) to SMTP sinks on 127.0.0.x: three
 * destinations that accept everything and one that answers 421 to every second connection.
 * Messages come from one queue through a fixed number of slots, as a sending domain's drain
 * hands them out. Each run measures, in order:
 * 1. baseline: messages to the three accepting destinations only; their messages/s;
 * 2. with the refusing destination: the same messages, plus one to the refusing destination
 *    after every third, interleaved in the queue; the accepting destinations' messages/s;
 * 3. the baseline again (the figure's baseline is the mean of 1 and 3: the load drifts).
 * The figure is (2) ÷ the baseline; the target: within 10 %. What the refusing destination's messages
 * got (deferred by its own 421s, or by its back-off without a connection) is counted.
 */
import { randomBytes } from 'node:crypto';
import { SMTPServer } from 'smtp-server';
import { createDnsResolver } from '../src/dns/resolver.ts';
import { freePort } from '../src/dev/ports.ts';
import { createLogger } from '../src/logger.ts';
import { createDirectRelay } from '../src/modules/outbound/direct-relay.ts';
import { createDestinationShaper } from '../src/modules/outbound/shaping/destination-shaper.ts';
import { createRedis } from '../src/redis/client.ts';
import { startDnsServer, type ZoneRecords } from '../test/support/dns-server.ts';
import type { BenchContext } from './lib/context.ts';
import { fmt, med } from './lib/stats.ts';
import type { Benchmark } from './lib/types.ts';

/** Messages in flight at once: a sending domain's drain at the default relay settings (5 × 4). */
const SLOTS = 20;
const ACCEPTING = ['one.test', 'two.test', 'three.test'];
const logger = createLogger('silent');

/** An MX on `host`; with `refuseEvery`, every n-th connection is answered 421. */
async function startSink(host: string, port: number, refuseEvery = 0) {
  let accepted = 0;
  let connections = 0;
  const server = new SMTPServer({
    authOptional: true,
    disableReverseLookup: true,
    hideSTARTTLS: true,
    closeTimeout: 200,
    onConnect(_session, callback) {
      connections += 1;
      if (refuseEvery > 0 && connections % refuseEvery === 0)
        callback(Object.assign(new Error('4.7.0 too many connections from your IP, try again later'), { responseCode: 421 }));
      else callback();
    },
    onData(stream, session, callback) {
      stream.on('data', () => {});
      stream.on('end', () => {
        accepted += session.envelope.rcptTo.length;
        callback();
      });
    },
  });
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return { accepted: () => accepted, connections: () => connections, close: () => new Promise<void>((r) => server.close(() => r())) };
}

export const benchmark: Benchmark = {
  name: 'destination-shaping',
  description: `Direct delivery through ${SLOTS} slots to three accepting destinations, alone and with a fourth answering 421 to every second connection: the accepting destinations' messages/s with it against without it.`,

  async setup(context: BenchContext) {
    const count = context.options.quick ? 600 : 3000;
    const port = await freePort();
    const sinks = await Promise.all(ACCEPTING.map((_, i) => startSink(`127.0.0.${31 + i}`, port)));
    const refusing = await startSink('127.0.0.34', port, 2);
    context.defer(async () => {
      await Promise.all([...sinks, refusing].map((sink) => sink.close()));
    });
    const zone: Record<string, ZoneRecords> = {
      'refusing.test': { MX: [{ exchange: 'mx.refusing.test', priority: 10 }] },
      'mx.refusing.test': { A: ['127.0.0.34'] },
    };
    ACCEPTING.forEach((domain, i) => {
      zone[domain] = { MX: [{ exchange: `mx.${domain}`, priority: 10 }] };
      zone[`mx.${domain}`] = { A: [`127.0.0.${31 + i}`] };
    });
    const dns = await startDnsServer(zone);
    context.defer(() => dns.close());
    const resolver = createDnsResolver(
      { dns: { servers: [dns.address], timeoutMs: 1_000 } },
      { cache: { ttlMs: 60_000, maxEntries: 100 } },
    );

    /** A fresh relay and shaper state (a key prefix of its own), as a worker starting on a new day. */
    async function relayForPhase() {
      const redis = createRedis(
        { redis: { url: context.services.redisUrl, keyPrefix: `herald-bench:shape-${randomBytes(4).toString('hex')}:` } },
        logger,
      );
      await new Promise((resolve) => redis.once('ready', resolve));
      return createDirectRelay({
        dns: resolver,
        heloName: 'bench.herald.test',
        port,
        poolSize: 3,
        ratePerMinute: 0,
        tls: { policy: 'none', source: 'host' },
        mtaSts: null,
        allowPrivateTargets: true,
        shaper: createDestinationShaper({
          redis,
          settings: { connections: 10, ratePerMinute: 0, backoff: { baseMs: 30_000, maxMs: 600_000 } },
          logger,
        }),
        logger,
      });
    }

    /** Sends the queue through SLOTS slots; the accepting destinations' messages/s and what the refusing one's got. */
    async function phase(withRefusing: boolean) {
      const queue: string[] = [];
      for (let i = 0; i < count; i += 1) {
        queue.push(`m${i}@${ACCEPTING[i % ACCEPTING.length]}`);
        if (withRefusing && i % 3 === 2) queue.push(`m${i}@refusing.test`);
      }
      const relay = await relayForPhase();
      const acceptedBefore = sinks.reduce((sum, sink) => sum + sink.accepted(), 0);
      let lastAccepted = 0;
      let deferredByRefusal = 0;
      let deferredByBackoff = 0;
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: SLOTS }, async () => {
          while (next < queue.length) {
            const to = queue[next++]!;
            const result = await relay.send(
              { from: 'bench@herald.test', to, subject: 'shaping', text: 'hello' },
              { from: 'bounce@herald.test', to: [to] },
            );
            const answer = result.kind === 'recipients' ? result.recipients[0] : null;
            if (to.endsWith('@refusing.test')) {
              if (answer?.response?.includes('deferred by Herald')) deferredByBackoff += 1;
              else if (!answer?.accepted) deferredByRefusal += 1;
            } else if (answer?.accepted) lastAccepted = performance.now();
          }
        }),
      );
      relay.close();
      const delivered = sinks.reduce((sum, sink) => sum + sink.accepted(), 0) - acceptedBefore;
      return { rate: delivered / ((lastAccepted - started) / 1000), delivered, deferredByRefusal, deferredByBackoff };
    }

    return {
      async warmup() {
        await phase(false);
      },
      async run() {
        // Baseline before and after, averaged: on a shared machine the load drifts within a run.
        const before = await phase(false);
        const connectionsBefore = refusing.connections();
        const mixed = await phase(true);
        const connectionsAfter = refusing.connections();
        const after = await phase(false);
        const alone = (before.rate + after.rate) / 2;
        return {
          alone_per_s: alone,
          with_refusing_per_s: mixed.rate,
          ratio: mixed.rate / alone,
          accepting_delivered: mixed.delivered,
          refusing_deferred_by_421: mixed.deferredByRefusal,
          refusing_deferred_by_backoff: mixed.deferredByBackoff,
          refusing_connections: connectionsAfter - connectionsBefore,
        };
      },
      close: () => Promise.resolve(),
    };
  },

  summarize(stats) {
    const ratio = med(stats, 'ratio');
    return [
      {
        name: 'destination-shaping',
        figure: `${fmt(med(stats, 'with_refusing_per_s'))} messages/s to the accepting destinations beside one answering 421 to every second connection (${fmt(med(stats, 'refusing_deferred_by_421'))} of its messages deferred by its 421s, ${fmt(med(stats, 'refusing_deferred_by_backoff'))} by its back-off)`,
        ratio,
        baseline: `the same destinations without it, ${fmt(med(stats, 'alone_per_s'))}/s`,
        target: { text: '≥ 90 %', met: ratio >= 0.9 },
      },
    ];
  },
};
