import { hostname } from 'node:os';
import * as v from 'valibot';
import { parseTrustedProxies } from './http/trusted-proxies.ts';
import { resolveRelayTls, SMTP_TLS_POLICIES, type RelayTlsSettings } from './smtp/tls-policy.ts';

/**
 * The one reader of `process.env`. Every setting has a development default; in production
 * (`NODE_ENV=production`) the settings that must not silently default are required.
 */

const DEFAULT_WEBHOOK_RETRY_SCHEDULE = '0s,5s,30s,2m,10m,30m,1h,2h,4h,8h,12h,24h,24h';

/** Deferred (4xx) recipients: the first attempt, then these delays, the last one repeating until the window closes. */
const DEFAULT_EMAIL_RETRY_SCHEDULE = '0s,1m,5m,15m,30m,1h,2h,4h';

const DURATION_UNITS_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const MAX_RETRY_STEP_MS = 7 * 86_400_000;
const MAX_RETRY_ATTEMPTS = 30;

/**
 * Parses WEBHOOK_RETRY_SCHEDULE (`0s,5s,30s,2m,...`: one entry per attempt, each the delay after
 * the previous attempt, units ms/s/m/h/d) into milliseconds. The first entry is the first
 * attempt and must be 0 (deliveries start at once); at most 30 entries, each at most 7 days.
 * Returns the schedule or the problem found.
 */
export function parseRetrySchedule(text: string): number[] | string {
  const entries = text.split(',').map((entry) => entry.trim());
  if (entries.length > MAX_RETRY_ATTEMPTS) return `at most ${MAX_RETRY_ATTEMPTS} attempts`;
  const schedule: number[] = [];
  for (const entry of entries) {
    const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(entry);
    if (!match) return `"${entry}" is not a duration like 0s, 500ms, 5s, 2m, 1h or 1d`;
    const ms = Math.round(Number(match[1]) * DURATION_UNITS_MS[match[2] as keyof typeof DURATION_UNITS_MS]);
    if (ms > MAX_RETRY_STEP_MS) return `"${entry}" is longer than 7 days`;
    schedule.push(ms);
  }
  if (schedule[0] !== 0) return 'the first entry is the first attempt and must be 0s';
  return schedule;
}

/** One duration (`72h`, `500ms`) in milliseconds, or the problem found. */
export function parseDuration(text: string): number | string {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) return `"${text}" is not a duration like 500ms, 5s, 2m, 1h or 3d`;
  return Math.round(Number(match[1]) * DURATION_UNITS_MS[match[2] as keyof typeof DURATION_UNITS_MS]);
}

const durationString = (fallback: string) =>
  v.pipe(
    v.optional(v.string(), fallback),
    v.rawCheck(({ dataset, addIssue }) => {
      if (dataset.typed && typeof parseDuration(dataset.value) === 'string') addIssue({ message: parseDuration(dataset.value) as string });
    }),
  );

/** A retry schedule (`0s,5s,30s,…`, see parseRetrySchedule), defaulting to `fallback`. */
const retryScheduleString = (fallback: string) =>
  v.pipe(
    v.optional(v.string(), fallback),
    v.rawCheck(({ dataset, addIssue }) => {
      const parsed = dataset.typed ? parseRetrySchedule(dataset.value) : [];
      if (typeof parsed === 'string') addIssue({ message: parsed });
    }),
  );

/** A whole number of concurrent items, 1 to 64. */
const concurrencyString = (fallback: string) =>
  v.pipe(v.optional(v.string(), fallback), v.regex(/^\d+$/, 'must be a whole number'), v.transform(Number), v.minValue(1), v.maxValue(64));

const booleanString = v.pipe(
  v.optional(v.picklist(['1', '0', 'true', 'false', 'on', 'off', 'yes', 'no', '']), ''),
  v.transform((value) => ['1', 'true', 'on', 'yes'].includes(value)),
);

const port = (fallback: string) =>
  v.pipe(
    v.optional(v.string(), fallback),
    v.regex(/^\d{1,5}$/, 'must be a port number'),
    v.transform(Number),
    v.minValue(0),
    v.maxValue(65535),
  );

const url = (fallback: string) =>
  v.pipe(v.optional(v.string(), fallback), v.url('must be a URL'));

const encryptionKey = v.optional(
  v.pipe(
    v.string(),
    v.check(
      (value) => Buffer.from(value, 'base64').length === 32,
      'must be 32 bytes, base64-encoded (openssl rand -base64 32)',
    ),
  ),
);

const EnvSchema = v.object({
  NODE_ENV: v.optional(v.picklist(['development', 'production', 'test']), 'development'),
  LOG_LEVEL: v.optional(v.picklist(['debug', 'info', 'warn', 'error', 'silent']), 'info'),
  DATABASE_URL: url('postgres://postgres@127.0.0.1:5432/herald'),
  DATABASE_POOL_MAX: v.pipe(v.optional(v.string(), '10'), v.transform(Number), v.integer(), v.minValue(1)),
  REDIS_URL: url('redis://127.0.0.1:6379'),
  REDIS_KEY_PREFIX: v.optional(v.string(), 'herald:'),
  TEMPORAL_ADDRESS: v.optional(v.string(), '127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: v.optional(v.string(), 'default'),
  /** The Temporal UI's address, for the dashboard's links to a workspace's workflows (none when unset). */
  TEMPORAL_UI_URL: v.optional(v.pipe(v.string(), v.url('must be a URL'))),
  /** A prebuilt workflow bundle (herald dev builds one per source version); else .build/ or bundled at start. */
  HERALD_WORKFLOW_BUNDLE: v.optional(v.string()),
  TEMPORAL_TASK_QUEUE_PREFIX: v.optional(v.pipe(v.string(), v.regex(/^[a-z0-9-]+$/)), 'herald'),
  PORT: port('3000'),
  HOST: v.optional(v.string(), '0.0.0.0'),
  API_PROCESSES: v.pipe(v.optional(v.string(), '1'), v.transform(Number), v.integer(), v.minValue(1), v.maxValue(64)),
  PUBLIC_URL: v.optional(v.pipe(v.string(), v.url('must be a URL'))),
  /** Reverse proxies whose X-Forwarded-For / X-Forwarded-Proto are believed: comma-separated addresses or CIDRs; empty, none. */
  TRUSTED_PROXIES: v.pipe(
    v.optional(v.string(), ''),
    v.rawCheck(({ dataset, addIssue }) => {
      const parsed = dataset.typed ? parseTrustedProxies(dataset.value) : null;
      if (typeof parsed === 'string') addIssue({ message: parsed });
    }),
  ),
  SMTP_PORT: port('2525'),
  SMTP_HOST: v.optional(v.string(), '0.0.0.0'),
  METRICS_PORT: port('9464'),
  METRICS_HOST: v.optional(v.string(), '127.0.0.1'),
  /** The SMTP submission front door (API keys as passwords): a port, 0 for any free one, `off`; default 587 in production, 2587 otherwise. */
  SMTP_SUBMISSION_PORT: v.optional(v.pipe(v.string(), v.regex(/^(\d{1,5}|off)$/, 'must be a port number or off'))),
  SMTP_SUBMISSION_HOST: v.optional(v.string()),
  /** Submission over implicit TLS (RFC 8314, "submissions"): needs SMTP_TLS_KEY_FILE and _CERT_FILE; 465 by default in production when they are set. */
  SMTP_SUBMISSIONS_PORT: v.optional(v.pipe(v.string(), v.regex(/^(\d{1,5}|off)$/, 'must be a port number or off'))),
  SMTP_TLS_KEY_FILE: v.optional(v.string()),
  SMTP_TLS_CERT_FILE: v.optional(v.string()),
  SMTP_RELAY_URL: url('smtp://127.0.0.1:2526'),
  /** Empty (`SMTP_RELAY_TLS=` in a .env file) means unset: the default for the relay URL. */
  SMTP_RELAY_TLS: v.optional(v.picklist([...SMTP_TLS_POLICIES, ''], `must be one of ${SMTP_TLS_POLICIES.join(', ')}`), ''),
  SMTP_RELAY_CA_FILE: v.optional(v.string(), ''),
  /** Where test keys' mail goes (an SMTP URL, e.g. the dev mail sink); unset: the worker's in-process mailbox simulator. */
  SANDBOX_RELAY_URL: v.optional(v.pipe(v.string(), v.url('must be a URL'))),
  /** `relay` hands every message to SMTP_RELAY_URL; `direct` delivers to each recipient domain's MX. */
  SMTP_DELIVERY: v.optional(v.picklist(['relay', 'direct'], 'must be relay or direct'), 'relay'),
  /** The name Herald gives in EHLO to remote MX hosts (direct delivery); default: this machine's host name. */
  SMTP_HELO_NAME: v.optional(v.pipe(v.string(), v.trim(), v.toLowerCase(), v.regex(/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/, 'must be a host name'))),
  /** The port of remote MX hosts (25; another only for tests and private networks). */
  SMTP_DIRECT_PORT: v.pipe(v.optional(v.string(), '25'), v.regex(/^\d{1,5}$/, 'must be a port number'), v.transform(Number), v.minValue(1), v.maxValue(65535)),
  /** Connections Herald keeps to one destination MX host at most. */
  SMTP_DIRECT_POOL_SIZE: v.pipe(v.optional(v.string(), '3'), v.regex(/^\d+$/, 'must be a whole number'), v.transform(Number), v.minValue(1), v.maxValue(50)),
  /** Messages per minute to one destination MX host at most (0: no limit). */
  SMTP_DIRECT_RATE_PER_MINUTE: v.pipe(v.optional(v.string(), '0'), v.regex(/^\d+$/, 'must be a whole number'), v.transform(Number), v.maxValue(100_000)),
  /** TLS with remote MX hosts: opportunistic STARTTLS (the internet's default), verify (refuse hosts without a valid certificate), none. */
  SMTP_DIRECT_TLS: v.optional(v.picklist(SMTP_TLS_POLICIES, `must be one of ${SMTP_TLS_POLICIES.join(', ')}`), 'opportunistic'),
  /** Honour destination domains' MTA-STS policies (RFC 8461): `enforce` (the default) or `off`. */
  SMTP_MTA_STS: v.optional(v.picklist(['enforce', 'off'], 'must be enforce or off'), 'enforce'),
  /** The HTTPS port of MTA-STS policy hosts (443; another only for tests). */
  SMTP_MTA_STS_PORT: v.pipe(v.optional(v.string(), '443'), v.regex(/^\d{1,5}$/, 'must be a port number'), v.transform(Number), v.minValue(1), v.maxValue(65535)),
  /** PEM file of extra certificate authorities trusted for MX hosts and MTA-STS policy hosts (private networks, tests). */
  SMTP_DIRECT_CA_FILE: v.optional(v.string(), ''),
  /** Direct delivery may connect to MX and MTA-STS policy hosts on loopback/private/link-local addresses (tests, private networks). */
  SMTP_DIRECT_ALLOW_PRIVATE_TARGETS: booleanString,
  BOUNCE_DOMAIN: v.optional(v.string(), 'bounces.herald.localhost'),
  SPF_INCLUDE: v.optional(
    v.pipe(v.string(), v.trim(), v.toLowerCase(), v.regex(/^[a-z0-9_-]+(\.[a-z0-9_-]+)+$/, 'must be a host name')),
    'spf.herald.localhost',
  ),
  BLOB_DIR: v.optional(v.string(), '.data/blobs'),
  HERALD_ENCRYPTION_KEY: encryptionKey,
  WEBHOOK_RETRY_SCHEDULE: retryScheduleString(DEFAULT_WEBHOOK_RETRY_SCHEDULE),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: booleanString,
  WEBHOOK_ENDPOINT_CONCURRENCY: concurrencyString('8'),
  QUEUE_DRAIN_LINGER_MS: v.pipe(v.optional(v.string(), '2000'), v.regex(/^\d+$/, 'must be a whole number'), v.transform(Number), v.maxValue(60_000)),
  EMAIL_RETRY_SCHEDULE: retryScheduleString(DEFAULT_EMAIL_RETRY_SCHEDULE),
  EMAIL_RETRY_WINDOW: durationString('72h'),
  SMTP_RELAY_FINAL_HOP: booleanString,
  INBOUND_DRAIN_CONCURRENCY: concurrencyString('4'),
  SMTP_RELAY_POOL_SIZE: v.pipe(v.optional(v.string(), '5'), v.regex(/^\d+$/), v.transform(Number), v.minValue(1), v.maxValue(100)),
  SEND_HANDOFF_WAIT_MS: v.pipe(v.optional(v.string(), '0'), v.regex(/^\d+$/), v.transform(Number), v.maxValue(30_000)),
  DNS_SERVERS: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\s*$|^[0-9a-fA-F.:[\]]+(\s*,\s*[0-9a-fA-F.:[\]]+)*\s*$/, 'must be a comma-separated list of IP[:port]'),
    ),
    '',
  ),
  CONTACT_DNS_CHECK: v.optional(
    v.pipe(
      v.picklist(['1', '0', 'true', 'false', 'on', 'off', 'yes', 'no']),
      v.transform((value) => ['1', 'true', 'on', 'yes'].includes(value)),
    ),
    'true',
  ),
  DNS_TIMEOUT_MS: v.pipe(v.optional(v.string(), '2000'), v.regex(/^\d+$/), v.transform(Number), v.minValue(100), v.maxValue(30_000)),
  INBOUND_RAW_RETENTION_DAYS: v.pipe(v.optional(v.string(), '30'), v.regex(/^\d+$/), v.transform(Number), v.maxValue(3650)),
  DNS_CACHE_TTL_SECONDS: v.pipe(v.optional(v.string(), '60'), v.regex(/^\d+$/), v.transform(Number), v.maxValue(3600)),
});

export type Env = v.InferOutput<typeof EnvSchema>;

export interface Config {
  env: Env['NODE_ENV'];
  logLevel: Env['LOG_LEVEL'];
  database: { url: string; poolMax: number };
  redis: { url: string; keyPrefix: string };
  temporal: {
    address: string;
    namespace: string;
    /** The one task queue of every workflow and activity (`<prefix>-main`). */
    taskQueue: string;
    /** Prefix of Herald's Temporal Schedule ids, so test runs sharing a server never collide. */
    schedulePrefix: string;
    /** The Temporal UI (TEMPORAL_UI_URL), linked from the dashboard; absent when unset. */
    uiUrl?: string;
    /** A prebuilt workflow bundle to load instead of bundling at start (HERALD_WORKFLOW_BUNDLE). */
    workflowBundlePath?: string;
  };
  /** processes: how many api processes `herald api` runs on this port (API_PROCESSES; node:cluster above 1). */
  /** trustedProxies: TRUSTED_PROXIES's entries (src/http/trusted-proxies.ts), empty when none. */
  http: { port: number; host: string; publicUrl: string; processes: number; trustedProxies: string[] };
  /** Prometheus metrics at http://<host>:<port>/metrics (METRICS_PORT 0: not served). */
  metrics: { port: number; host: string };
  /** rawRetentionMs: how long the raw bytes of an ingested inbound message are kept (0: forever). */
  smtp: { port: number; host: string; tlsKeyFile?: string; tlsCertFile?: string; rawRetentionMs: number };
  /**
   * The SMTP submission front door (null: off): STARTTLS with the smtp TLS files on `port`,
   * implicit TLS on `implicitTlsPort` when set; AUTH with an API key.
   */
  submission: { port: number; host: string; implicitTlsPort?: number } | null;
  /**
   * How messages leave: through the relay (SMTP_RELAY_URL), or straight to each recipient
   * domain's MX hosts (`direct`: EHLO as `heloName`, `port` 25, at most `poolSize` connections
   * and `ratePerMinute` messages per destination host, STARTTLS as `tls` says).
   */
  delivery:
    | { mode: 'relay' }
    | {
        mode: 'direct';
        heloName: string;
        port: number;
        poolSize: number;
        ratePerMinute: number;
        tls: RelayTlsSettings;
        /** MTA-STS: honoured (on its HTTPS `port`) or null (off). */
        mtaSts: { port: number } | null;
        /** SMTP_DIRECT_CA_FILE. */
        caFile?: string;
        /** SMTP_DIRECT_ALLOW_PRIVATE_TARGETS: MX and policy hosts may be on addresses the address policy forbids. */
        allowPrivateTargets: boolean;
      };
  relayUrl: string;
  /** SANDBOX_RELAY_URL and its TLS (the URL's default policy); null: the in-process simulator. */
  sandboxRelay: { url: string; tls: RelayTlsSettings } | null;
  /** TLS with the relay: policy (SMTP_RELAY_TLS or the default for the URL) and extra trusted CAs. */
  relayTls: RelayTlsSettings;
  bounceDomain: string;
  /** The host sending domains must `include:` in their SPF record (SPF_INCLUDE). */
  spfInclude: string;
  blobDir: string;
  encryptionKey?: Buffer;
  webhooks: {
    retrySchedule: string;
    /** WEBHOOK_RETRY_SCHEDULE in milliseconds: entry i is the delay before attempt i + 1. */
    retryScheduleMs: number[];
    allowPrivateTargets: boolean;
    /** Requests in flight to one endpoint at most (WEBHOOK_ENDPOINT_CONCURRENCY). */
    endpointConcurrency: number;
  };
  /** How long a queue drain (webhook endpoint, sending domain) waits for new rows once nothing is due before it returns. */
  /** inboundConcurrency: raw messages the inbound actor's drain ingests at once (parsing is CPU). */
  queues: { drainLingerMs: number; inboundConcurrency: number };
  sends: {
    /** Deferred recipients: entry 0 is the first attempt, then the delays; the last repeats. */
    retryScheduleMs: number[];
    /** How long deferred recipients are retried before email.failed (EMAIL_RETRY_WINDOW). */
    retryWindowMs: number;
    /** The relay is the final hop (the dev sink): accepted means delivered. */
    relayIsFinalHop: boolean;
    relayPoolSize: number;
    /** How long POST /outbox/emails waits for the hand-off to the relay before answering 202. */
    handoffWaitMs: number;
  };
  /** Resolvers for contact-quality and domain checks; empty means the system's resolvers. */
  /** cacheTtlMs: how long inbound authentication reuses a DNS answer (0: never). */
  dns: { servers: string[]; timeoutMs: number; checkContacts: boolean; cacheTtlMs: number };
}

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

const REQUIRED_IN_PRODUCTION = [
  'DATABASE_URL',
  'REDIS_URL',
  'TEMPORAL_ADDRESS',
  'PUBLIC_URL',
  'HERALD_ENCRYPTION_KEY',
] as const;

/** Parses an environment (default: `process.env`) into a typed config, or throws ConfigError. */
export function loadConfig(source: NodeJS.ProcessEnv = process.env): Config {
  const result = v.safeParse(EnvSchema, source);
  if (!result.success) {
    throw new ConfigError(
      result.issues.map((issue) => `${v.getDotPath(issue) ?? 'env'}: ${issue.message}`),
    );
  }
  const env = result.output;
  if (env.NODE_ENV === 'production') {
    const missing = REQUIRED_IN_PRODUCTION.filter((name) => !source[name]);
    if (missing.length > 0) {
      throw new ConfigError(missing.map((name) => `${name}: required in production`));
    }
  }
  const tlsFiles = Boolean(env.SMTP_TLS_KEY_FILE && env.SMTP_TLS_CERT_FILE);
  if (env.SMTP_SUBMISSIONS_PORT && env.SMTP_SUBMISSIONS_PORT !== 'off' && !tlsFiles) {
    throw new ConfigError(['SMTP_SUBMISSIONS_PORT: implicit TLS needs SMTP_TLS_KEY_FILE and SMTP_TLS_CERT_FILE']);
  }
  const submissionsPort = env.SMTP_SUBMISSIONS_PORT ?? (env.NODE_ENV === 'production' && tlsFiles ? '465' : 'off');
  const relayTls = resolveRelayTls({ url: env.SMTP_RELAY_URL, policy: env.SMTP_RELAY_TLS || undefined, caFile: env.SMTP_RELAY_CA_FILE || undefined });
  if (typeof relayTls === 'string') throw new ConfigError([relayTls]);
  const sandboxTls = env.SANDBOX_RELAY_URL ? resolveRelayTls({ url: env.SANDBOX_RELAY_URL }) : null;
  if (typeof sandboxTls === 'string') throw new ConfigError([`SANDBOX_RELAY_URL: ${sandboxTls}`]);
  const prefix = env.TEMPORAL_TASK_QUEUE_PREFIX;
  return {
    env: env.NODE_ENV,
    logLevel: env.LOG_LEVEL,
    database: { url: env.DATABASE_URL, poolMax: env.DATABASE_POOL_MAX },
    redis: { url: env.REDIS_URL, keyPrefix: env.REDIS_KEY_PREFIX },
    temporal: {
      address: env.TEMPORAL_ADDRESS,
      namespace: env.TEMPORAL_NAMESPACE,
      taskQueue: `${prefix}-main`,
      schedulePrefix: prefix,
      ...(env.HERALD_WORKFLOW_BUNDLE ? { workflowBundlePath: env.HERALD_WORKFLOW_BUNDLE } : {}),
      ...(env.TEMPORAL_UI_URL ? { uiUrl: env.TEMPORAL_UI_URL.replace(/\/+$/, '') } : {}),
    },
    http: {
      port: env.PORT,
      host: env.HOST,
      publicUrl: (env.PUBLIC_URL ?? `http://127.0.0.1:${env.PORT}`).replace(/\/+$/, ''),
      processes: env.API_PROCESSES,
      trustedProxies: env.TRUSTED_PROXIES.split(',').map((entry) => entry.trim()).filter(Boolean),
    },
    metrics: { port: env.METRICS_PORT, host: env.METRICS_HOST },
    smtp: {
      port: env.SMTP_PORT,
      host: env.SMTP_HOST,
      rawRetentionMs: env.INBOUND_RAW_RETENTION_DAYS * 24 * 60 * 60 * 1000,
      ...(env.SMTP_TLS_KEY_FILE ? { tlsKeyFile: env.SMTP_TLS_KEY_FILE } : {}),
      ...(env.SMTP_TLS_CERT_FILE ? { tlsCertFile: env.SMTP_TLS_CERT_FILE } : {}),
    },
    submission:
      env.SMTP_SUBMISSION_PORT === 'off'
        ? null
        : {
            port: Math.min(65535, Number(env.SMTP_SUBMISSION_PORT ?? (env.NODE_ENV === 'production' ? '587' : '2587'))),
            host: env.SMTP_SUBMISSION_HOST ?? env.SMTP_HOST,
            ...(submissionsPort !== 'off' ? { implicitTlsPort: Math.min(65535, Number(submissionsPort)) } : {}),
          },
    delivery:
      env.SMTP_DELIVERY === 'direct'
        ? {
            mode: 'direct',
            heloName: env.SMTP_HELO_NAME ?? hostname().toLowerCase(),
            port: env.SMTP_DIRECT_PORT,
            poolSize: env.SMTP_DIRECT_POOL_SIZE,
            ratePerMinute: env.SMTP_DIRECT_RATE_PER_MINUTE,
            tls: { policy: env.SMTP_DIRECT_TLS, source: 'host' },
            mtaSts: env.SMTP_MTA_STS === 'enforce' ? { port: env.SMTP_MTA_STS_PORT } : null,
            ...(env.SMTP_DIRECT_CA_FILE ? { caFile: env.SMTP_DIRECT_CA_FILE } : {}),
            allowPrivateTargets: env.SMTP_DIRECT_ALLOW_PRIVATE_TARGETS,
          }
        : { mode: 'relay' },
    relayUrl: env.SMTP_RELAY_URL,
    sandboxRelay: env.SANDBOX_RELAY_URL && sandboxTls ? { url: env.SANDBOX_RELAY_URL, tls: sandboxTls } : null,
    relayTls,
    bounceDomain: env.BOUNCE_DOMAIN,
    spfInclude: env.SPF_INCLUDE,
    blobDir: env.BLOB_DIR,
    ...(env.HERALD_ENCRYPTION_KEY
      ? { encryptionKey: Buffer.from(env.HERALD_ENCRYPTION_KEY, 'base64') }
      : {}),
    webhooks: {
      retrySchedule: env.WEBHOOK_RETRY_SCHEDULE,
      retryScheduleMs: parseRetrySchedule(env.WEBHOOK_RETRY_SCHEDULE) as number[],
      allowPrivateTargets: env.WEBHOOK_ALLOW_PRIVATE_TARGETS,
      endpointConcurrency: env.WEBHOOK_ENDPOINT_CONCURRENCY,
    },
    queues: { drainLingerMs: env.QUEUE_DRAIN_LINGER_MS, inboundConcurrency: env.INBOUND_DRAIN_CONCURRENCY },
    sends: {
      retryScheduleMs: parseRetrySchedule(env.EMAIL_RETRY_SCHEDULE) as number[],
      retryWindowMs: parseDuration(env.EMAIL_RETRY_WINDOW) as number,
      // Direct delivery hands each message to the recipient's own MX: accepted means delivered.
      relayIsFinalHop: env.SMTP_DELIVERY === 'direct' || env.SMTP_RELAY_FINAL_HOP,
      relayPoolSize: env.SMTP_RELAY_POOL_SIZE,
      handoffWaitMs: env.SEND_HANDOFF_WAIT_MS,
    },
    dns: {
      servers: env.DNS_SERVERS.split(',').map((server) => server.trim()).filter(Boolean),
      timeoutMs: env.DNS_TIMEOUT_MS,
      checkContacts: env.CONTACT_DNS_CHECK,
      cacheTtlMs: env.DNS_CACHE_TTL_SECONDS * 1000,
    },
  };
}

const DevEnvSchema = v.object({
  TEMPORAL_BIN: v.optional(v.string()),
  HERALD_CACHE_DIR: v.optional(v.string()),
  HERALD_DATA_DIR: v.optional(v.string()),
  DATABASE_URL: v.optional(v.pipe(v.string(), v.url('must be a URL'))),
  REDIS_URL: v.optional(v.pipe(v.string(), v.url('must be a URL'))),
  TEMPORAL_ADDRESS: v.optional(v.string()),
  HOME: v.optional(v.string(), '/tmp'),
  PATH: v.optional(v.string(), ''),
  PORT: port('3000'),
  SMTP_PORT: port('2525'),
  /** The submission front door; the next free port when this one is busy. */
  SMTP_SUBMISSION_PORT: port('2587'),
  TEMPORAL_PORT: port('7233'),
  TEMPORAL_UI_PORT: port('8233'),
  /** Set to a real relay to send through it; unset or loopback, `herald dev` runs the mail sink there. */
  SMTP_RELAY_URL: v.optional(v.pipe(v.string(), v.url('must be a URL'))),
  /** Shown in the banner with the policy they give the relay (the worker reads them itself). */
  SMTP_RELAY_TLS: v.optional(v.picklist([...SMTP_TLS_POLICIES, ''], `must be one of ${SMTP_TLS_POLICIES.join(', ')}`), ''),
  SMTP_RELAY_CA_FILE: v.optional(v.string(), ''),
  /** The mail sink's viewer; the next free port is taken when this one is busy. */
  MAIL_SINK_HTTP_PORT: port('8025'),
  /** Prometheus metrics of `herald all` (split: worker, api, smtp on this port and the next two). */
  METRICS_PORT: port('9464'),
  /** Run api, worker and smtp as three processes instead of one (`herald all`). */
  HERALD_DEV_SPLIT: booleanString,
});

export type DevEnv = v.InferOutput<typeof DevEnvSchema>;

/**
 * Settings of the developer tooling (`herald dev`, `herald test`): which services were
 * configured explicitly (and must be used as they are) and where caches live.
 */
export function loadDevEnv(source: NodeJS.ProcessEnv = process.env): DevEnv {
  const result = v.safeParse(DevEnvSchema, source);
  if (!result.success) {
    throw new ConfigError(result.issues.map((issue) => `${v.getDotPath(issue) ?? 'env'}: ${issue.message}`));
  }
  return result.output;
}
