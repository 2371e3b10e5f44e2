import { readFileSync, writeFileSync } from 'node:fs';
import { createSecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NativeConnection } from '@temporalio/worker';
import { loadConfig, type Config } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { runDomainVerification } from '../../src/modules/domains/domain-verification.starter.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import { connectTemporal, connectTemporalClient, temporalConnectError, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { temporalConnectionOptions } from '../../src/temporal/connection-options.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { createOrg } from '../support/factories.ts';
import { createTestStack, sharedServices, type TestStack } from '../support/stack.ts';
import { createTestCertificates } from '../support/test-certificates.ts';
import { startTlsProxy, type TlsProxy } from '../support/tls-proxy.ts';

/**
 * Herald against a secured Temporal frontend: the dev server cannot serve TLS, so a
 * TLS-terminating proxy (test/support/tls-proxy.ts) that demands a client certificate from the
 * test CA stands in front of its gRPC port. Every connection is built from Herald's settings.
 */
describe('Temporal over mutual TLS', () => {
  const logger = createLogger('silent');
  const certificates = createTestCertificates();
  let proxy: TlsProxy;
  let stack: TestStack;
  let dns: TestDnsServer;
  let mtls: Record<string, string>;
  let serverCertificate: { key: string; cert: string };
  let worker: RunningWorker | undefined;
  let temporal: TemporalClientHandle | undefined;

  /** A key written next to its certificate, for TEMPORAL_TLS_KEY_FILE. */
  function keyFile(name: string, key: string): string {
    const file = join(certificates.dir, `${name}.key.pem`);
    writeFileSync(file, key, { mode: 0o600 });
    return file;
  }

  function configWith(overrides: Record<string, string>): Config {
    return loadConfig({ ...stack.env, TEMPORAL_ADDRESS: proxy.address, ...overrides });
  }

  beforeAll(async () => {
    installTemporalLogging(logger);
    const ca = certificates.authority('Herald Test Temporal CA');
    const server = ca.issue(['DNS:localhost', 'IP:127.0.0.1']);
    serverCertificate = server;
    const client = ca.issue(['DNS:herald-worker'], 'clientAuth');
    const [host, port] = sharedServices().temporalAddress.split(':');
    proxy = await startTlsProxy({
      target: { host: host ?? '127.0.0.1', port: Number(port) },
      key: server.key,
      cert: server.cert,
      clientCa: readFileSync(ca.certFile, 'utf8'),
    });
    dns = await startDnsServer();
    stack = await createTestStack({ DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '300' });
    mtls = {
      TEMPORAL_TLS_CA_FILE: ca.certFile,
      TEMPORAL_TLS_CERT_FILE: client.certFile,
      TEMPORAL_TLS_KEY_FILE: keyFile('worker', client.key),
    };
  });

  afterAll(async () => {
    await worker?.shutdown();
    if (temporal) {
      for await (const schedule of temporal.client.schedule.list()) {
        if (schedule.scheduleId.startsWith(`${stack.config.temporal.schedulePrefix}-`)) {
          await temporal.client.schedule
            .getHandle(schedule.scheduleId)
            .delete()
            .catch(() => {});
        }
      }
      await temporal.close();
    }
    await stack?.close();
    await dns?.close();
    await proxy?.close();
    certificates.remove();
  });

  it('runs a workflow with client and worker connected through the proxy with a client certificate', async () => {
    const config = configWith(mtls);
    expect(config.temporal.tls).toMatchObject({ caFile: mtls.TEMPORAL_TLS_CA_FILE, client: { certFile: mtls.TEMPORAL_TLS_CERT_FILE } });
    temporal = await connectTemporalClient(config);
    worker = await startWorker(config, logger);
    const orgId = (await createOrg(stack.orm)).org.id;
    const domains = createDomainsService({ orm: stack.orm, encryptionKey: stack.config.encryptionKey });
    const domain = await domains.addDomain({ orgId, domain: `tls-${stack.id}.example.test` });
    const outcome = await runDomainVerification(temporal.client, config, { orgId, domainId: domain.id }, 60_000);
    expect(outcome).toMatchObject({ domainId: domain.id, status: 'pending', records: { dkim: { status: 'missing' } } });
    expect(proxy.accepted.length).toBeGreaterThanOrEqual(2);
    expect(proxy.accepted.every((peer) => peer.subject === 'herald-worker')).toBe(true);
  });

  it('a client without a certificate is refused, with an error naming the frontend and how it connected', async () => {
    const config = configWith({ TEMPORAL_TLS_CA_FILE: mtls.TEMPORAL_TLS_CA_FILE ?? '' });
    const before = proxy.refused.length;
    const failure = await connectTemporal(config.temporal, { connectTimeout: 5000 }).then(
      (connection) => connection.close().then(() => null),
      (error: unknown) => error as Error,
    );
    expect(failure?.message).toMatch(new RegExp(`^cannot connect to Temporal at ${proxy.address} \\(TLS \\(CA [^)]+\\)\\): `));
    expect(failure?.message).toMatch(/TEMPORAL_TLS_CERT_FILE/);
    expect(proxy.refused.slice(before).join('\n')).toMatch(/peer did not return a certificate/);
  });

  it('checks the frontend certificate against TEMPORAL_TLS_SERVER_NAME when set', async () => {
    const named = await connectTemporal(configWith({ ...mtls, TEMPORAL_TLS_SERVER_NAME: 'localhost' }).temporal);
    await named.close();
    const elsewhere = configWith({ ...mtls, TEMPORAL_TLS_SERVER_NAME: 'temporal.elsewhere.test' });
    await expect(connectTemporal(elsewhere.temporal, { connectTimeout: 3000 })).rejects.toThrow(/server name temporal\.elsewhere\.test/);
  });

  it('a worker whose certificate another authority signed is refused', async () => {
    const stranger = certificates.authority('Some Other CA').issue(['DNS:herald-worker'], 'clientAuth');
    const config = configWith({
      ...mtls,
      TEMPORAL_TLS_CERT_FILE: stranger.certFile,
      TEMPORAL_TLS_KEY_FILE: keyFile('stranger', stranger.key),
    });
    const before = { refused: proxy.refused.length, accepted: proxy.accepted.length };
    const failure = await NativeConnection.connect(temporalConnectionOptions(config.temporal)).then(
      (connection) => connection.close().then(() => null),
      (error: unknown) => temporalConnectError(config.temporal, error),
    );
    expect(failure?.message).toMatch(
      new RegExp(`^cannot connect to Temporal at ${proxy.address} \\(TLS \\(CA [^)]+\\), client certificate [^)]+\\): `),
    );
    expect(proxy.refused.length).toBeGreaterThan(before.refused);
    expect(proxy.accepted.length).toBe(before.accepted);
  });

  it('sends TEMPORAL_API_KEY as a bearer token from the client and the worker connection', async () => {
    // An HTTP/2 frontend that reads each call's metadata and refuses it, as Temporal Cloud does a bad key.
    const authorizations: string[] = [];
    const frontend = createSecureServer({ ...serverCertificate, ALPNProtocols: ['h2'] }, () => {});
    frontend.on('stream', (stream, headers) => {
      authorizations.push(String(headers.authorization));
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '16', 'grpc-message': 'API key refused' },
        { endStream: true },
      );
    });
    await new Promise<void>((resolve) => frontend.listen(0, '127.0.0.1', resolve));
    try {
      const address = `127.0.0.1:${(frontend.address() as AddressInfo).port}`;
      const access = loadConfig({
        ...stack.env,
        TEMPORAL_ADDRESS: address,
        TEMPORAL_TLS_CA_FILE: mtls.TEMPORAL_TLS_CA_FILE ?? '',
        TEMPORAL_API_KEY: 'cloud-key-123',
      }).temporal;
      await expect(connectTemporal(access, { connectTimeout: 5000 })).rejects.toThrow(
        /TLS \(CA [^)]+\), API key\): .*API key refused.*the frontend refused the credentials: check TEMPORAL_API_KEY/,
      );
      await expect(NativeConnection.connect(temporalConnectionOptions(access))).rejects.toThrow(/API key refused/);
      expect(new Set(authorizations)).toEqual(new Set(['Bearer cloud-key-123']));
    } finally {
      await new Promise<void>((resolve) => frontend.close(() => resolve()));
    }
  });
});
