import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { lazyTemporalClient } from '../../src/temporal/client.ts';
import { describeTemporalAccess, temporalConnectionOptions } from '../../src/temporal/connection-options.ts';
import { createTestCertificates, type TestCertificate } from '../support/test-certificates.ts';

/** The Temporal connection settings, from the environment to the options every connection is opened with. */
describe('Temporal connection settings', () => {
  const certificates = createTestCertificates();
  let caFile: string;
  let client: TestCertificate & { keyFile: string };
  let other: TestCertificate & { keyFile: string };

  function withKeyFile(name: string, certificate: TestCertificate) {
    const keyFile = join(certificates.dir, `${name}.key.pem`);
    writeFileSync(keyFile, certificate.key);
    return { ...certificate, keyFile };
  }

  const temporal = (env: Record<string, string>) => loadConfig({ TEMPORAL_ADDRESS: 'temporal.example.test:7233', ...env }).temporal;

  function problem(run: () => unknown): string {
    try {
      run();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as ConfigError).problems.join('\n');
    }
    throw new Error('expected a ConfigError');
  }

  beforeAll(() => {
    const ca = certificates.authority('Unit CA');
    caFile = ca.certFile;
    client = withKeyFile('client', ca.issue(['DNS:herald'], 'clientAuth'));
    other = withKeyFile('other', ca.issue(['DNS:other'], 'clientAuth'));
  });

  afterAll(() => certificates.remove());

  it('connects in plaintext when nothing asks for TLS', () => {
    const access = temporal({});
    expect(access.tls).toBeNull();
    expect(temporalConnectionOptions(access)).toEqual({ address: 'temporal.example.test:7233' });
    expect(describeTemporalAccess(access)).toBe('plaintext');
  });

  it("TEMPORAL_TLS=true: TLS against the system's roots", () => {
    expect(temporalConnectionOptions(temporal({ TEMPORAL_TLS: 'true' }))).toEqual({ address: 'temporal.example.test:7233', tls: {} });
  });

  it('an API key implies TLS and is carried by the options of both SDK connections, never by the description', () => {
    const access = temporal({ TEMPORAL_API_KEY: 'cloud-key-123' });
    expect(temporalConnectionOptions(access)).toEqual({ address: 'temporal.example.test:7233', tls: {}, apiKey: 'cloud-key-123' });
    expect(describeTemporalAccess(access)).toBe('TLS (system roots), API key');
  });

  it('mutual TLS: the CA, the client pair and the server name, read from their files', () => {
    const access = temporal({
      TEMPORAL_TLS_CA_FILE: caFile,
      TEMPORAL_TLS_CERT_FILE: client.certFile,
      TEMPORAL_TLS_KEY_FILE: client.keyFile,
      TEMPORAL_TLS_SERVER_NAME: 'frontend.internal',
    });
    const options = temporalConnectionOptions(access);
    expect(options.tls?.serverNameOverride).toBe('frontend.internal');
    expect(Buffer.from(options.tls?.clientCertPair?.crt ?? []).toString()).toBe(client.cert);
    expect(Buffer.from(options.tls?.clientCertPair?.key ?? []).toString()).toBe(client.key);
    expect(Buffer.from(options.tls?.serverRootCACertificate ?? []).toString()).toContain('BEGIN CERTIFICATE');
  });

  it.each([
    [{ TEMPORAL_TLS_CERT_FILE: '/etc/herald/worker.crt' }, 'TEMPORAL_TLS_CERT_FILE: mutual TLS needs TEMPORAL_TLS_KEY_FILE too'],
    [{ TEMPORAL_TLS_KEY_FILE: '/etc/herald/worker.key' }, 'TEMPORAL_TLS_KEY_FILE: mutual TLS needs TEMPORAL_TLS_CERT_FILE too'],
  ])('refuses half a client pair at load: %o', (env, expected) => {
    expect(problem(() => temporal(env))).toBe(expected);
  });

  it('names the setting whose file is missing, is not PEM, or whose key is not the certificate’s', () => {
    expect(problem(() => temporalConnectionOptions(temporal({ TEMPORAL_TLS_CA_FILE: '/nonexistent/ca.pem' })))).toMatch(
      /^TEMPORAL_TLS_CA_FILE: cannot read \/nonexistent\/ca\.pem: ENOENT/,
    );
    expect(problem(() => temporalConnectionOptions(temporal({ TEMPORAL_TLS_CA_FILE: client.keyFile })))).toBe(
      `TEMPORAL_TLS_CA_FILE: ${client.keyFile} holds no PEM certificate`,
    );
    const pair = (cert: string, key: string) => temporal({ TEMPORAL_TLS_CERT_FILE: cert, TEMPORAL_TLS_KEY_FILE: key });
    expect(problem(() => temporalConnectionOptions(pair(client.certFile, '/nonexistent/key.pem')))).toMatch(
      /^TEMPORAL_TLS_KEY_FILE: cannot read/,
    );
    expect(problem(() => temporalConnectionOptions(pair(client.certFile, caFile)))).toBe(
      `TEMPORAL_TLS_KEY_FILE: ${caFile} holds no PEM private key (an unencrypted one is needed)`,
    );
    expect(problem(() => temporalConnectionOptions(pair(client.certFile, other.keyFile)))).toBe(
      `TEMPORAL_TLS_KEY_FILE: ${other.keyFile} is not the key of the certificate in TEMPORAL_TLS_CERT_FILE (${client.certFile})`,
    );
  });

  it('the lazy client of the api and smtp processes reads the files at start', () => {
    expect(problem(() => lazyTemporalClient({ temporal: temporal({ TEMPORAL_TLS_CA_FILE: '/nonexistent/ca.pem' }) }))).toMatch(
      /^TEMPORAL_TLS_CA_FILE: cannot read/,
    );
  });
});
