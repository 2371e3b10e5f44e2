import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';

const key = randomBytes(32).toString('base64');

describe('loadConfig', () => {
  /** Everything production requires, for a relay (the default delivery). */
  const PRODUCTION = {
    NODE_ENV: 'production',
    DATABASE_URL: 'postgres://db/h',
    REDIS_URL: 'redis://r:6379',
    TEMPORAL_ADDRESS: 't:7233',
    PUBLIC_URL: 'https://h.example.com',
    SMTP_RELAY_URL: 'smtps://relay.example.com',
    BOUNCE_DOMAIN: 'bounces.example.com',
    SPF_INCLUDE: 'spf.example.com',
    HERALD_ENCRYPTION_KEY: key,
  };

  /** The problems loadConfig lists for `env` (it must refuse it). */
  function problemsOf(env: Record<string, string>): string[] {
    try {
      loadConfig(env);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as ConfigError).problems;
    }
    throw new Error('loadConfig accepted the environment');
  }

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
    expect(config.webhooks).toEqual({
      retrySchedule: '0s,1s',
      retryScheduleMs: [0, 1000],
      allowPrivateTargets: true,
      endpointConcurrency: 8,
    });
  });

  it('parses the webhook retry schedule into milliseconds (default: 13 attempts over about 3 days)', () => {
    expect(loadConfig({}).webhooks.retryScheduleMs).toEqual([
      0, 5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000, 28_800_000, 43_200_000, 86_400_000, 86_400_000,
    ]);
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '0s, 200ms,1.5s,2m,1h,7d' }).webhooks.retryScheduleMs).toEqual([
      0, 200, 1_500, 120_000, 3_600_000, 604_800_000,
    ]);
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
    expect(loadConfig({ SMTP_RELAY_URL: 'smtp://smtp.example.com:587', SMTP_RELAY_TLS: 'opportunistic' }).relayTls).toEqual({
      policy: 'opportunistic',
      source: 'SMTP_RELAY_TLS',
    });
    expect(loadConfig({ SMTP_RELAY_TLS: '', SMTP_RELAY_CA_FILE: '' }).relayTls).toEqual({ policy: 'opportunistic', source: 'loopback' });
    expect(loadConfig({ SMTP_RELAY_CA_FILE: '/etc/herald/relay-ca.pem' }).relayTls).toEqual({
      policy: 'verify',
      source: 'SMTP_RELAY_CA_FILE',
      caFile: '/etc/herald/relay-ca.pem',
    });
  });

  it.each([
    [{ SMTP_RELAY_TLS: 'require' }, 'SMTP_RELAY_TLS: must be one of opportunistic, verify, none'],
    [{ SMTP_RELAY_TLS: 'none', SMTP_RELAY_URL: 'smtps://relay.example.com' }, 'SMTP_RELAY_TLS: none cannot apply to smtps://'],
    [
      { SMTP_RELAY_TLS: 'opportunistic', SMTP_RELAY_CA_FILE: '/etc/ca.pem' },
      'SMTP_RELAY_CA_FILE: only used with SMTP_RELAY_TLS=verify (not opportunistic)',
    ],
  ])('refuses the relay TLS settings %o', (env, problem) => {
    expect(() => loadConfig(env)).toThrowError(problem);
  });

  it('listens for submission over implicit TLS only with TLS files: 465 by default in production, off in development', () => {
    const production = PRODUCTION;
    const files = { SMTP_TLS_KEY_FILE: '/etc/herald/key.pem', SMTP_TLS_CERT_FILE: '/etc/herald/cert.pem' };
    expect(loadConfig(production).submission).toEqual({ port: 587, host: '0.0.0.0' });
    expect(loadConfig({ ...production, ...files }).submission).toEqual({ port: 587, host: '0.0.0.0', implicitTlsPort: 465 });
    expect(loadConfig({ ...production, ...files, SMTP_SUBMISSIONS_PORT: 'off' }).submission).toEqual({ port: 587, host: '0.0.0.0' });
    expect(loadConfig(files).submission).toEqual({ port: 2587, host: '0.0.0.0' });
    expect(loadConfig({ ...files, SMTP_SUBMISSIONS_PORT: '2465' }).submission).toMatchObject({ implicitTlsPort: 2465 });
    expect(() => loadConfig({ SMTP_SUBMISSIONS_PORT: '2465' })).toThrowError(
      'SMTP_SUBMISSIONS_PORT: implicit TLS needs SMTP_TLS_KEY_FILE and SMTP_TLS_CERT_FILE',
    );
    expect(() => loadConfig({ ...files, SMTP_SUBMISSIONS_PORT: 'tls' })).toThrowError(ConfigError);
  });

  it('keeps blobs in BLOB_DIR by default and in an S3 bucket with BLOB_STORE=s3, refusing an incomplete bucket configuration', () => {
    expect(loadConfig({ BLOB_DIR: '' }).blobStore).toEqual({ kind: 'filesystem', dir: '' });
    const s3 = {
      BLOB_STORE: 's3',
      S3_BUCKET: 'mail-blobs',
      S3_ENDPOINT: 'http://seaweedfs:8333/',
      S3_ACCESS_KEY_ID: 'AKIA1',
      S3_SECRET_ACCESS_KEY: 'secret',
      S3_FORCE_PATH_STYLE: 'true',
      S3_KEY_PREFIX: 'prod/herald',
    };
    expect(loadConfig(s3).blobStore).toEqual({
      kind: 's3',
      s3: {
        bucket: 'mail-blobs',
        region: 'us-east-1',
        endpoint: 'http://seaweedfs:8333',
        forcePathStyle: true,
        keyPrefix: 'prod/herald/',
        credentials: { accessKeyId: 'AKIA1', secretAccessKey: 'secret' },
      },
    });
    // No key: the AWS SDK's default chain (an instance or task role); no endpoint: AWS S3.
    expect(loadConfig({ BLOB_STORE: 's3', S3_BUCKET: 'mail-blobs', S3_REGION: 'eu-west-1' }).blobStore).toEqual({
      kind: 's3',
      s3: { bucket: 'mail-blobs', region: 'eu-west-1', forcePathStyle: false, keyPrefix: '' },
    });
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return [];
      } catch (error) {
        return (error as ConfigError).problems;
      }
    };
    expect(problems({ BLOB_STORE: 's3' })).toEqual(['S3_BUCKET: required when BLOB_STORE=s3']);
    expect(problems({ ...s3, S3_SECRET_ACCESS_KEY: '' })[0]).toMatch(/^S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY: set both/);
    expect(problems({ ...s3, S3_KEY_PREFIX: '../other' })[0]).toMatch(/^S3_KEY_PREFIX:/);
    expect(problems({ ...s3, S3_BUCKET: 'Not_A_Bucket' })[0]).toMatch(/^S3_BUCKET:/);
    expect(problems({ BLOB_STORE: 'gcs' })[0]).toMatch(/^BLOB_STORE:/);
  });

  it('refuses to start in production on any development default, listing every missing setting at once', () => {
    expect(problemsOf({ NODE_ENV: 'production' })).toEqual([
      'DATABASE_URL: required in production',
      'REDIS_URL: required in production',
      'TEMPORAL_ADDRESS: required in production',
      'PUBLIC_URL: required in production',
      'SMTP_RELAY_URL: required in production with SMTP_DELIVERY=relay',
      'BOUNCE_DOMAIN: required in production',
      'SPF_INCLUDE: required in production',
      'HERALD_ENCRYPTION_KEY: required in production',
    ]);
    const error = (() => {
      try {
        loadConfig({ NODE_ENV: 'production', DATABASE_URL: 'postgres://db/h' });
      } catch (caught) {
        return caught as Error;
      }
      return null;
    })();
    expect(error?.message).toBe(
      [
        'invalid configuration:',
        '  REDIS_URL: required in production',
        '  TEMPORAL_ADDRESS: required in production',
        '  PUBLIC_URL: required in production',
        '  SMTP_RELAY_URL: required in production with SMTP_DELIVERY=relay',
        '  BOUNCE_DOMAIN: required in production',
        '  SPF_INCLUDE: required in production',
        '  HERALD_ENCRYPTION_KEY: required in production',
      ].join('\n'),
    );
  });

  it.each(Object.keys(PRODUCTION).filter((name) => name !== 'NODE_ENV'))('refuses production without %s alone', (name) => {
    const env: Record<string, string> = { ...PRODUCTION };
    delete env[name];
    expect(problemsOf(env)).toEqual([
      name === 'SMTP_RELAY_URL' ? 'SMTP_RELAY_URL: required in production with SMTP_DELIVERY=relay' : `${name}: required in production`,
    ]);
  });

  it('asks direct delivery in production for its EHLO name instead of the relay', () => {
    const { SMTP_RELAY_URL: _relay, ...direct } = { ...PRODUCTION, SMTP_DELIVERY: 'direct' };
    expect(problemsOf(direct)).toEqual(['SMTP_HELO_NAME: required in production with SMTP_DELIVERY=direct']);
    expect(loadConfig({ ...direct, SMTP_HELO_NAME: 'mta1.example.com' }).delivery).toMatchObject({
      mode: 'direct',
      heloName: 'mta1.example.com',
    });
  });

  it('starts in production when everything required is set, and nothing falls back to a development value', () => {
    const config = loadConfig(PRODUCTION);
    expect(config.env).toBe('production');
    expect(config.http.publicUrl).toBe('https://h.example.com');
    expect(config.bounceDomain).toBe('bounces.example.com');
    expect(config.spfInclude).toBe('spf.example.com');
    expect(config.relayUrl).toBe('smtps://relay.example.com');
    // Metrics stay on loopback on purpose (METRICS_HOST); nothing clients or recipients see does.
    expect(JSON.stringify(config)).not.toMatch(/localhost|127\.0\.0\.1:|2526/);
  });

  it('reads a key ring: the newest key seals, the previous ones still open', () => {
    const older = randomBytes(32).toString('base64');
    const config = loadConfig({ HERALD_ENCRYPTION_KEY: key, HERALD_ENCRYPTION_KEYS_PREVIOUS: ` ${older} ,` });
    expect(config.encryptionKeys.map((k) => k.toString('base64'))).toEqual([key, older]);
    expect(config.encryptionKey?.toString('base64')).toBe(key);
    expect(loadConfig({}).encryptionKeys).toEqual([]);
    expect(problemsOf({ HERALD_ENCRYPTION_KEYS_PREVIOUS: older })).toEqual([
      'HERALD_ENCRYPTION_KEYS_PREVIOUS: needs HERALD_ENCRYPTION_KEY (the newest key, which seals)',
    ]);
    expect(problemsOf({ HERALD_ENCRYPTION_KEY: key, HERALD_ENCRYPTION_KEYS_PREVIOUS: 'c2hvcnQ=' })).toEqual([
      'HERALD_ENCRYPTION_KEYS_PREVIOUS: must be comma-separated keys of 32 bytes, base64-encoded (openssl rand -base64 32)',
    ]);
  });

  it('keeps direct delivery off private MX and policy hosts unless SMTP_DIRECT_ALLOW_PRIVATE_TARGETS opts in', () => {
    const delivery = (env: Record<string, string>) => loadConfig({ SMTP_DELIVERY: 'direct', ...env }).delivery;
    expect(delivery({})).toMatchObject({ mode: 'direct', allowPrivateTargets: false });
    expect(delivery({ SMTP_DIRECT_ALLOW_PRIVATE_TARGETS: 'true' })).toMatchObject({ mode: 'direct', allowPrivateTargets: true });
  });

  it('builds the whole config from an empty environment (pinned: a change here changes every default)', () => {
    const DAY = 86_400_000;
    expect(loadConfig({})).toEqual({
      env: 'development',
      encryptionKeys: [],
      logLevel: 'info',
      database: { url: 'postgres://postgres@127.0.0.1:5432/herald', poolMax: 10 },
      redis: { url: 'redis://127.0.0.1:6379', keyPrefix: 'herald:' },
      temporal: {
        address: '127.0.0.1:7233',
        namespace: 'default',
        taskQueue: 'herald-main',
        schedulePrefix: 'herald',
        tls: null,
        searchAttributes: 'register',
      },
      http: { port: 3000, host: '0.0.0.0', publicUrl: 'http://127.0.0.1:3000', processes: 1, trustedProxies: [] },
      metrics: { port: 9464, host: '127.0.0.1' },
      retention: { days: { emails: 90, webhooks: 30, inbound: 90, contactImports: 30 }, batchSize: 1000 },
      smtp: { port: 2525, host: '0.0.0.0', rawRetentionMs: 30 * DAY },
      submission: { port: 2587, host: '0.0.0.0' },
      delivery: { mode: 'relay' },
      relayUrl: 'smtp://127.0.0.1:2526',
      sandboxRelay: null,
      egress: { pools: {}, defaultPool: null, streamPools: {} },
      relayTls: { policy: 'opportunistic', source: 'loopback' },
      bounceDomain: 'bounces.herald.localhost',
      spfInclude: 'spf.herald.localhost',
      blobStore: { kind: 'filesystem', dir: '.data/blobs' },
      webhooks: {
        retrySchedule: '0s,5s,30s,2m,10m,30m,1h,2h,4h,8h,12h,24h,24h',
        retryScheduleMs: [
          0,
          5_000,
          30_000,
          120_000,
          600_000,
          1_800_000,
          3_600_000,
          7_200_000,
          14_400_000,
          28_800_000,
          43_200_000,
          DAY,
          DAY,
        ],
        allowPrivateTargets: false,
        endpointConcurrency: 8,
      },
      queues: { drainLingerMs: 2_000, inboundConcurrency: 4 },
      sends: {
        retryScheduleMs: [0, 60_000, 300_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000],
        retryWindowMs: 3 * DAY,
        relayIsFinalHop: false,
        relayPoolSize: 5,
        relayMaxConnections: 20,
        handoffWaitMs: 0,
      },
      dns: { servers: [], timeoutMs: 2_000, checkContacts: true, cacheTtlMs: 60_000 },
    });
  });

  it('builds direct delivery, the sandbox relay and the optional parts from their settings (pinned)', () => {
    const config = loadConfig({
      SMTP_DELIVERY: 'direct',
      SMTP_HELO_NAME: ' MX.Example.com ',
      SMTP_DIRECT_CA_FILE: '/etc/herald/mx-ca.pem',
      SMTP_MTA_STS: 'off',
      SMTP_DIRECT_ALLOW_PRIVATE_TARGETS: 'yes',
      SANDBOX_RELAY_URL: 'smtp://127.0.0.1:1025',
      TEMPORAL_UI_URL: 'http://ui:8233//',
      HERALD_WORKFLOW_BUNDLE: '/srv/bundle.js',
      TRUSTED_PROXIES: '10.0.0.0/8, ::1',
      DNS_SERVERS: '1.1.1.1, 8.8.8.8:53',
      CONTACT_DNS_CHECK: 'off',
      SMTP_SUBMISSION_PORT: 'off',
      SPF_INCLUDE: ' SPF.Example.com ',
      EMAIL_RETRY_WINDOW: '1d',
    });
    expect(config.delivery).toEqual({
      mode: 'direct',
      heloName: 'mx.example.com',
      port: 25,
      poolSize: 3,
      ratePerMinute: 0,
      shaping: { connections: 10, ratePerMinute: 0, backoff: { baseMs: 30_000, maxMs: 600_000 } },
      tls: { policy: 'opportunistic', source: 'host' },
      mtaSts: null,
      caFile: '/etc/herald/mx-ca.pem',
      allowPrivateTargets: true,
    });
    expect(config.sends).toMatchObject({ relayIsFinalHop: true, retryWindowMs: 86_400_000 });
    expect(config.sandboxRelay).toEqual({ url: 'smtp://127.0.0.1:1025', tls: { policy: 'opportunistic', source: 'loopback' } });
    expect(config.temporal).toMatchObject({ uiUrl: 'http://ui:8233', workflowBundlePath: '/srv/bundle.js' });
    expect(config.http.trustedProxies).toEqual(['10.0.0.0/8', '::1']);
    expect(config.dns).toMatchObject({ servers: ['1.1.1.1', '8.8.8.8:53'], checkContacts: false });
    expect(config.submission).toBeNull();
    expect(config.spfInclude).toBe('spf.example.com');
    expect(loadConfig({ SMTP_DELIVERY: 'direct', SMTP_MTA_STS_PORT: '8443' }).delivery).toMatchObject({ mtaSts: { port: 8443 } });
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
    ['SMTP_RELAY_POOL_SIZE', 'five', 'SMTP_RELAY_POOL_SIZE'],
    ['CONTACT_DNS_CHECK', 'maybe', 'CONTACT_DNS_CHECK'],
    ['EMAIL_RETRY_WINDOW', 'soon', 'EMAIL_RETRY_WINDOW'],
    ['TRUSTED_PROXIES', 'banana', 'TRUSTED_PROXIES'],
    ['SANDBOX_RELAY_URL', 'not a url', 'SANDBOX_RELAY_URL'],
  ])('rejects %s=%s with a message naming the variable', (name, value, expected) => {
    expect(() => loadConfig({ [name]: value })).toThrowError(new RegExp(`${expected}:`));
  });
});
