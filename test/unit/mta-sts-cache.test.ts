import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { createMtaSts } from '../../src/modules/outbound/mta-sts.ts';
import { createTestCertificates } from '../support/test-certificates.ts';

/** The policy cache of RFC 8461 §5.1, against a policy host on 127.0.0.1 and a scripted DNS. */
describe('MTA-STS policy cache', () => {
  const certificates = createTestCertificates();
  const authority = certificates.authority('Herald test CA');
  let server: Server;
  let port = 0;
  let fetches = 0;
  let policyUp = true;
  let txtId = 'a1';
  let now = 1_000_000;

  beforeAll(async () => {
    const cert = authority.issue(['DNS:mta-sts.cache.test']);
    server = createServer({ key: cert.key, cert: cert.cert }, (_req, res) => {
      fetches += 1;
      if (!policyUp) return void res.writeHead(503).end();
      res.writeHead(200, { 'content-type': 'text/plain' }).end('version: STSv1\nmode: enforce\nmx: mx.cache.test\nmax_age: 3600\n');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => {
    server.close();
    certificates.remove();
  });

  const mtaSts = (options: { allowPrivateTargets?: boolean; aaaa?: string[]; log?: (line: string) => void } = {}) =>
    createMtaSts({
      dns: {
        txt: () => Promise.resolve({ status: 'found', records: [`v=STSv1; id=${txtId}`] }),
        a: () => Promise.resolve({ status: 'found', records: ['127.0.0.1'] }),
        aaaa: () => Promise.resolve(options.aaaa ? { status: 'found', records: options.aaaa } : { status: 'none' }),
      },
      logger: options.log ? createLogger('warn', {}, options.log) : createLogger('silent'),
      ca: [readFileSync(authority.certFile, 'utf8')],
      port,
      now: () => now,
      // The policy host listens on loopback: only the opt-in reaches it.
      allowPrivateTargets: options.allowPrivateTargets ?? true,
    });

  it('fetches a policy once per id while it is younger than its max_age, then again', async () => {
    const sts = mtaSts();
    fetches = 0;
    expect(await sts.policyFor('cache.test')).toMatchObject({ kind: 'policy', policy: { mode: 'enforce', maxAgeSeconds: 3600 } });
    now += 3_600_000;
    expect(await sts.policyFor('cache.test')).toMatchObject({ kind: 'policy' });
    expect(fetches).toBe(1);
    now += 1;
    expect(await sts.policyFor('cache.test')).toMatchObject({ kind: 'policy' });
    expect(fetches).toBe(2);
  });

  it('fetches again when the TXT id changes, and keeps the cached policy when that fetch fails', async () => {
    const sts = mtaSts();
    fetches = 0;
    await sts.policyFor('cache.test');
    txtId = 'b2';
    policyUp = false;
    expect(await sts.policyFor('cache.test')).toMatchObject({ kind: 'policy', policy: { mode: 'enforce' } });
    expect(fetches).toBe(2);
    // Past max_age with the host still down: no policy applies any more.
    now += 3_600_001;
    expect(await sts.policyFor('cache.test')).toEqual({ kind: 'none' });
    policyUp = true;
    txtId = 'a1';
  });

  it('never fetches a policy from a host whose addresses the address policy forbids, unless private targets are allowed', async () => {
    const lines: string[] = [];
    fetches = 0;
    const refusing = mtaSts({ allowPrivateTargets: false, aaaa: ['::ffff:10.0.0.1'], log: (line) => lines.push(line) });
    expect(await refusing.policyFor('cache.test')).toEqual({ kind: 'none' });
    expect(fetches).toBe(0);
    expect(lines.join('\n')).toMatch(
      /mta-sts\.cache\.test has only addresses Herald does not connect to: 127\.0\.0\.1 \(loopback\), ::ffff:10\.0\.0\.1 \(private\)/,
    );
    expect(await mtaSts({ allowPrivateTargets: true }).policyFor('cache.test')).toMatchObject({ kind: 'policy' });
    expect(fetches).toBe(1);
  });
});
