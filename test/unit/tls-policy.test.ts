import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { createTlsFailureLog, describeTlsFailure } from '../../src/modules/outbound/relay-tls.ts';
import { describeRelayTls, isLoopbackHost, resolveRelayTls, type RelayTlsSettings } from '../../src/smtp/tls-policy.ts';

describe('resolveRelayTls', () => {
  it.each([
    ['smtp://127.0.0.1:25', undefined, undefined, { policy: 'opportunistic', source: 'loopback' }],
    ['smtp://localhost:25', undefined, undefined, { policy: 'opportunistic', source: 'loopback' }],
    ['smtp://[::1]:25', undefined, undefined, { policy: 'opportunistic', source: 'loopback' }],
    ['smtp://smtp.example.com:587', undefined, undefined, { policy: 'verify', source: 'host' }],
    ['smtp://10.0.0.5:25', undefined, undefined, { policy: 'verify', source: 'host' }],
    ['smtp://postfix:25', undefined, undefined, { policy: 'verify', source: 'host' }],
    ['smtps://127.0.0.1:465', undefined, undefined, { policy: 'verify', source: 'smtps' }],
    ['smtp://127.0.0.1:25', undefined, '/etc/ca.pem', { policy: 'verify', source: 'SMTP_RELAY_CA_FILE', caFile: '/etc/ca.pem' }],
    ['smtp://smtp.example.com:587', 'opportunistic', undefined, { policy: 'opportunistic', source: 'SMTP_RELAY_TLS' }],
    ['smtp://127.0.0.1:25', 'verify', '/etc/ca.pem', { policy: 'verify', source: 'SMTP_RELAY_TLS', caFile: '/etc/ca.pem' }],
    ['smtp://127.0.0.1:25', 'none', undefined, { policy: 'none', source: 'SMTP_RELAY_TLS' }],
    ['smtps://relay.example.com', 'opportunistic', undefined, { policy: 'opportunistic', source: 'SMTP_RELAY_TLS' }],
  ] as const)('%s with SMTP_RELAY_TLS=%s and SMTP_RELAY_CA_FILE=%s', (url, policy, caFile, expected) => {
    expect(resolveRelayTls({ url, ...(policy ? { policy } : {}), ...(caFile ? { caFile } : {}) })).toEqual(expected);
  });

  it.each([
    ['smtps://relay.example.com', 'none', undefined, 'SMTP_RELAY_TLS: none cannot apply to smtps://'],
    ['smtp://127.0.0.1:25', 'opportunistic', '/etc/ca.pem', 'SMTP_RELAY_CA_FILE: only used with SMTP_RELAY_TLS=verify'],
    ['smtp://127.0.0.1:25', 'none', '/etc/ca.pem', 'SMTP_RELAY_CA_FILE: only used with SMTP_RELAY_TLS=verify'],
    ['http://127.0.0.1:25', undefined, undefined, 'SMTP_RELAY_URL: must start with smtp:// or smtps://'],
  ] as const)('refuses %s with SMTP_RELAY_TLS=%s and SMTP_RELAY_CA_FILE=%s', (url, policy, caFile, problem) => {
    const result = resolveRelayTls({ url, ...(policy ? { policy } : {}), ...(caFile ? { caFile } : {}) });
    expect(typeof result === 'string' && result).toContain(problem);
  });
});

describe('isLoopbackHost', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['localhost', true],
    ['mail.localhost', true],
    ['[::1]', true],
    ['::ffff:127.0.0.1', true],
    ['128.0.0.1', false],
    ['10.0.0.1', false],
    ['localhost.example.com', false],
    ['[::2]', false],
    ['example.com', false],
  ])('%s → %s', (host, expected) => {
    expect(isLoopbackHost(host)).toBe(expected);
  });
});

describe('describeRelayTls', () => {
  it('says which policy applies and what chose it', () => {
    expect(describeRelayTls({ policy: 'opportunistic', source: 'loopback' })).toBe('opportunistic (default for a relay on loopback)');
    expect(describeRelayTls({ policy: 'verify', source: 'SMTP_RELAY_CA_FILE', caFile: '/etc/ca.pem' })).toBe(
      'verify (SMTP_RELAY_CA_FILE is set, trusting /etc/ca.pem)',
    );
  });
});

describe('describeTlsFailure', () => {
  const verify: RelayTlsSettings = { policy: 'verify', source: 'host' };

  it("names a refused certificate with Node's code", () => {
    const error = Object.assign(new Error('certificate has expired'), { code: 'ESOCKET', originalCode: 'CERT_HAS_EXPIRED' });
    expect(describeTlsFailure(error, verify)).toEqual({
      key: 'CERT_HAS_EXPIRED',
      reason: 'TLS with the relay failed (policy verify): its certificate was refused: certificate has expired (CERT_HAS_EXPIRED)',
    });
  });

  it('leaves failures that are not TLS to the caller', () => {
    expect(
      describeTlsFailure(
        Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:25'), { code: 'ESOCKET', originalCode: 'ECONNREFUSED' }),
        verify,
      ),
    ).toBeNull();
    expect(describeTlsFailure(Object.assign(new Error('Greeting never received'), { code: 'ETIMEDOUT' }), verify)).toBeNull();
  });
});

describe('createTlsFailureLog', () => {
  it('warns once per reason while the failure lasts, and again after the relay worked in between', () => {
    const lines: { level: string; msg: string; reason?: string }[] = [];
    const log = createTlsFailureLog(
      createLogger('info', {}, (line) => lines.push(JSON.parse(line) as (typeof lines)[number])),
      {
        address: '127.0.0.1:25',
        settings: { policy: 'verify', source: 'SMTP_RELAY_TLS' },
      },
    );
    const selfSigned = { key: 'DEPTH_ZERO_SELF_SIGNED_CERT', reason: 'self-signed' };
    const expired = { key: 'CERT_HAS_EXPIRED', reason: 'expired' };
    log.recordFailure(selfSigned);
    log.recordFailure(selfSigned);
    log.recordFailure(expired);
    log.recordFailure(selfSigned);
    expect(lines.map((line) => [line.level, line.reason])).toEqual([
      ['warn', 'self-signed'],
      ['warn', 'expired'],
    ]);
    log.recordSuccess();
    log.recordSuccess();
    log.recordFailure(selfSigned);
    expect(lines.map((line) => [line.level, line.msg])).toEqual([
      ['warn', 'relay TLS failed: messages stay deferred until it works'],
      ['warn', 'relay TLS failed: messages stay deferred until it works'],
      ['info', 'relay TLS works again'],
      ['warn', 'relay TLS failed: messages stay deferred until it works'],
    ]);
  });
});
