import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';

const key = randomBytes(32).toString('base64');

describe('loadConfig', () => {
  it('gives every setting a development default', () => {
    const config = loadConfig({});
    expect(config.env).toBe('development');
    expect(config.database.url).toBe('postgres://postgres@127.0.0.1:5432/herald');
    expect(config.redis.url).toBe('redis://127.0.0.1:6379');
    expect(config.temporal).toMatchObject({
      address: '127.0.0.1:7233',
      namespace: 'default',
      taskQueue: 'herald-main',
    });
    expect(config.http).toEqual({ port: 3000, host: '0.0.0.0', publicUrl: 'http://127.0.0.1:3000', processes: 1, trustedProxies: [] });
    expect(config.smtp.port).toBe(2525);
    expect(config.webhooks.allowPrivateTargets).toBe(false);
    expect(config.encryptionKey).toBeUndefined();
  });

  it('reads the contract variables', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://u:p@db:5432/h',
      REDIS_URL: 'redis://cache:6379',
      TEMPORAL_ADDRESS: 'temporal:7233',
      TEMPORAL_NAMESPACE: 'prod',
      PORT: '8080',
      PUBLIC_URL: 'https://mail.example.com/',
      SMTP_PORT: '25',
      SMTP_RELAY_URL: 'smtp://relay:587',
      BOUNCE_DOMAIN: 'bounces.example.com',
      BLOB_DIR: '/var/lib/herald',
      HERALD_ENCRYPTION_KEY: key,
      WEBHOOK_RETRY_SCHEDULE: '0s,1s',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    });
    expect(config.http.publicUrl).toBe('https://mail.example.com');
    expect(config.temporal.namespace).toBe('prod');
    expect(config.encryptionKey?.length).toBe(32);
    expect(config.webhooks).toEqual({ retrySchedule: '0s,1s', retryScheduleMs: [0, 1000], allowPrivateTargets: true, endpointConcurrency: 8 });
  });

  it('parses the webhook retry schedule into milliseconds (default: 13 attempts over about 3 days)', () => {
    expect(loadConfig({}).webhooks.retryScheduleMs).toEqual([
      0, 5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000, 28_800_000, 43_200_000, 86_400_000, 86_400_000,
    ]);
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '0s, 200ms,1.5s,2m,1h,7d' }).webhooks.retryScheduleMs).toEqual([0, 200, 1_500, 120_000, 3_600_000, 604_800_000]);
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '0ms' }).webhooks.retryScheduleMs).toEqual([0]);
  });

  it('reads the DNS answer cache TTL for inbound authentication: 60 s by default, 0 to 3600 s', () => {
    expect(loadConfig({}).dns.cacheTtlMs).toBe(60_000);
    expect(loadConfig({ DNS_CACHE_TTL_SECONDS: '0' }).dns.cacheTtlMs).toBe(0);
    expect(loadConfig({ DNS_CACHE_TTL_SECONDS: '3600' }).dns.cacheTtlMs).toBe(3_600_000);
    expect(() => loadConfig({ DNS_CACHE_TTL_SECONDS: '3601' })).toThrowError(ConfigError);
    expect(() => loadConfig({ DNS_CACHE_TTL_SECONDS: '-1' })).toThrowError(ConfigError);
  });

  it('reads the raw inbound retention: 30 days by default, 0 (forever) to 3650 days', () => {
    const DAY = 24 * 60 * 60 * 1000;
    expect(loadConfig({}).smtp.rawRetentionMs).toBe(30 * DAY);
    expect(loadConfig({ INBOUND_RAW_RETENTION_DAYS: '0' }).smtp.rawRetentionMs).toBe(0);
    expect(loadConfig({ INBOUND_RAW_RETENTION_DAYS: '3650' }).smtp.rawRetentionMs).toBe(3650 * DAY);
    expect(() => loadConfig({ INBOUND_RAW_RETENTION_DAYS: '3651' })).toThrowError(ConfigError);
    expect(() => loadConfig({ INBOUND_RAW_RETENTION_DAYS: '1.5' })).toThrowError(ConfigError);
  });

  it('reads the queue drain settings: 8 requests per webhook endpoint (1 to 64), a 2 s linger (0 to 60 s)', () => {
    expect(loadConfig({}).webhooks.endpointConcurrency).toBe(8);
    expect(loadConfig({ WEBHOOK_ENDPOINT_CONCURRENCY: '1' }).webhooks.endpointConcurrency).toBe(1);
    expect(loadConfig({ WEBHOOK_ENDPOINT_CONCURRENCY: '64' }).webhooks.endpointConcurrency).toBe(64);
    expect(() => loadConfig({ WEBHOOK_ENDPOINT_CONCURRENCY: '0' })).toThrowError(ConfigError);
    expect(() => loadConfig({ WEBHOOK_ENDPOINT_CONCURRENCY: '65' })).toThrowError(ConfigError);
    expect(loadConfig({}).queues.drainLingerMs).toBe(2_000);
    expect(loadConfig({ QUEUE_DRAIN_LINGER_MS: '0' }).queues.drainLingerMs).toBe(0);
    expect(loadConfig({ QUEUE_DRAIN_LINGER_MS: '60000' }).queues.drainLingerMs).toBe(60_000);
    expect(() => loadConfig({ QUEUE_DRAIN_LINGER_MS: '60001' })).toThrowError(ConfigError);
    expect(() => loadConfig({ QUEUE_DRAIN_LINGER_MS: '-1' })).toThrowError(ConfigError);
  });

  it('reads the inbound drain concurrency: 4 raw messages at once by default (1 to 64)', () => {
    expect(loadConfig({}).queues.inboundConcurrency).toBe(4);
    expect(loadConfig({ INBOUND_DRAIN_CONCURRENCY: '1' }).queues.inboundConcurrency).toBe(1);
    expect(loadConfig({ INBOUND_DRAIN_CONCURRENCY: '64' }).queues.inboundConcurrency).toBe(64);
    expect(() => loadConfig({ INBOUND_DRAIN_CONCURRENCY: '0' })).toThrowError(ConfigError);
    expect(() => loadConfig({ INBOUND_DRAIN_CONCURRENCY: '65' })).toThrowError(ConfigError);
  });

  it('runs one api process by default; API_PROCESSES 1 to 64', () => {
    expect(loadConfig({}).http.processes).toBe(1);
    expect(loadConfig({ API_PROCESSES: '64' }).http.processes).toBe(64);
    expect(() => loadConfig({ API_PROCESSES: '0' })).toThrowError(ConfigError);
    expect(() => loadConfig({ API_PROCESSES: '65' })).toThrowError(ConfigError);
    expect(() => loadConfig({ API_PROCESSES: 'two' })).toThrowError(ConfigError);
  });

  it('serves metrics on 127.0.0.1:9464 by default; METRICS_PORT=0 turns them off', () => {
    expect(loadConfig({}).metrics).toEqual({ port: 9464, host: '127.0.0.1' });
    expect(loadConfig({ METRICS_PORT: '0', METRICS_HOST: '0.0.0.0' }).metrics).toEqual({ port: 0, host: '0.0.0.0' });
    expect(() => loadConfig({ METRICS_PORT: '65536' })).toThrowError(ConfigError);
  });

  it('answers a send at commit by default; the hand-off wait is an opt-in up to 30 s', () => {
    expect(loadConfig({}).sends.handoffWaitMs).toBe(0);
    expect(loadConfig({ SEND_HANDOFF_WAIT_MS: '30000' }).sends.handoffWaitMs).toBe(30_000);
    expect(() => loadConfig({ SEND_HANDOFF_WAIT_MS: '30001' })).toThrowError(ConfigError);
  });

  it('reads the relay TLS policy: opportunistic for the loopback default relay, verify for a relay elsewhere, SMTP_RELAY_TLS to choose', () => {
    expect(loadConfig({}).relayTls).toEqual({ policy: 'opportunistic', source: 'loopback' });
    expect(loadConfig({ SMTP_RELAY_URL: 'smtp://smtp.example.com:587' }).relayTls).toEqual({ policy: 'verify', source: 'host' });
    expect(loadConfig({ SMTP_RELAY_URL: 'smtp://smtp.example.com:587', SMTP_RELAY_TLS: 'opportunistic' }).relayTls).toEqual({ policy: 'opportunistic', source: 'SMTP_RELAY_TLS' });
    expect(loadConfig({ SMTP_RELAY_TLS: '', SMTP_RELAY_CA_FILE: '' }).relayTls).toEqual({ policy: 'opportunistic', source: 'loopback' });
    expect(loadConfig({ SMTP_RELAY_CA_FILE: '/etc/herald/relay-ca.pem' }).relayTls).toEqual({ policy: 'verify', source: 'SMTP_RELAY_CA_FILE', caFile: '/etc/herald/relay-ca.pem' });
  });

  it.each([
    [{ SMTP_RELAY_TLS: 'require' }, 'SMTP_RELAY_TLS: must be one of opportunistic, verify, none'],
    [{ SMTP_RELAY_TLS: 'none', SMTP_RELAY_URL: 'smtps://relay.example.com' }, 'SMTP_RELAY_TLS: none cannot apply to smtps://'],
    [{ SMTP_RELAY_TLS: 'opportunistic', SMTP_RELAY_CA_FILE: '/etc/ca.pem' }, 'SMTP_RELAY_CA_FILE: only used with SMTP_RELAY_TLS=verify (not opportunistic)'],
  ])('refuses the relay TLS settings %o', (env, problem) => {
    expect(() => loadConfig(env)).toThrowError(problem);
  });

  it('listens for submission over implicit TLS only with TLS files: 465 by default in production, off in development', () => {
    const production = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/h', REDIS_URL: 'redis://r:6379', TEMPORAL_ADDRESS: 't:7233', PUBLIC_URL: 'https://h.example.com', HERALD_ENCRYPTION_KEY: key };
    const files = { SMTP_TLS_KEY_FILE: '/etc/herald/key.pem', SMTP_TLS_CERT_FILE: '/etc/herald/cert.pem' };
    expect(loadConfig(production).submission).toEqual({ port: 587, host: '0.0.0.0' });
    expect(loadConfig({ ...production, ...files }).submission).toEqual({ port: 587, host: '0.0.0.0', implicitTlsPort: 465 });
    expect(loadConfig({ ...production, ...files, SMTP_SUBMISSIONS_PORT: 'off' }).submission).toEqual({ port: 587, host: '0.0.0.0' });
    expect(loadConfig(files).submission).toEqual({ port: 2587, host: '0.0.0.0' });
    expect(loadConfig({ ...files, SMTP_SUBMISSIONS_PORT: '2465' }).submission).toMatchObject({ implicitTlsPort: 2465 });
    expect(() => loadConfig({ SMTP_SUBMISSIONS_PORT: '2465' })).toThrowError('SMTP_SUBMISSIONS_PORT: implicit TLS needs SMTP_TLS_KEY_FILE and SMTP_TLS_CERT_FILE');
    expect(() => loadConfig({ ...files, SMTP_SUBMISSIONS_PORT: 'tls' })).toThrowError(ConfigError);
  });

  it('refuses to start in production without its secrets', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrowError(ConfigError);
    try {
      loadConfig({ NODE_ENV: 'production', DATABASE_URL: 'postgres://db/h' });
    } catch (error) {
      expect((error as ConfigError).problems).toEqual([
        'REDIS_URL: required in production',
        'TEMPORAL_ADDRESS: required in production',
        'PUBLIC_URL: required in production',
        'HERALD_ENCRYPTION_KEY: required in production',
      ]);
    }
  });

  it('starts in production when everything required is set', () => {
    const config = loadConfig({
      NODE_ENV: 'production',
      DATABASE_URL: 'postgres://db/h',
      REDIS_URL: 'redis://r:6379',
      TEMPORAL_ADDRESS: 't:7233',
      PUBLIC_URL: 'https://h.example.com',
      HERALD_ENCRYPTION_KEY: key,
    });
    expect(config.env).toBe('production');
  });

  it('keeps direct delivery off private MX and policy hosts unless SMTP_DIRECT_ALLOW_PRIVATE_TARGETS opts in', () => {
    const delivery = (env: Record<string, string>) => loadConfig({ SMTP_DELIVERY: 'direct', ...env }).delivery;
    expect(delivery({})).toMatchObject({ mode: 'direct', allowPrivateTargets: false });
    expect(delivery({ SMTP_DIRECT_ALLOW_PRIVATE_TARGETS: 'true' })).toMatchObject({ mode: 'direct', allowPrivateTargets: true });
  });

  it.each([
    ['PORT', 'eighty', 'PORT'],
    ['PORT', '70000', 'PORT'],
    ['DATABASE_URL', 'not a url', 'DATABASE_URL'],
    ['HERALD_ENCRYPTION_KEY', 'c2hvcnQ=', 'HERALD_ENCRYPTION_KEY'],
    ['WEBHOOK_ALLOW_PRIVATE_TARGETS', 'maybe', 'WEBHOOK_ALLOW_PRIVATE_TARGETS'],
    ['SMTP_DIRECT_ALLOW_PRIVATE_TARGETS', 'maybe', 'SMTP_DIRECT_ALLOW_PRIVATE_TARGETS'],
    ['WEBHOOK_RETRY_SCHEDULE', '5s,10s', 'WEBHOOK_RETRY_SCHEDULE'],
    ['WEBHOOK_RETRY_SCHEDULE', '0s,soon', 'WEBHOOK_RETRY_SCHEDULE'],
    ['WEBHOOK_RETRY_SCHEDULE', '0s,8d', 'WEBHOOK_RETRY_SCHEDULE'],
    ['WEBHOOK_RETRY_SCHEDULE', Array(31).fill('0s').join(','), 'WEBHOOK_RETRY_SCHEDULE'],
    ['NODE_ENV', 'staging', 'NODE_ENV'],
  ])('rejects %s=%s with a message naming the variable', (name, value, expected) => {
    expect(() => loadConfig({ [name]: value })).toThrowError(new RegExp(`${expected}:`));
  });
});
