import { hostname } from 'node:os';
import * as v from 'valibot';
import { blobStoreSettings } from './blob/blob-config.ts';
import { DEV_SETTINGS, SERVER_SETTINGS_READ_BY_DEV } from './settings/dev-settings.ts';
import { DEV_SUBMISSION_PORT, SERVER_SETTINGS } from './settings/server-settings.ts';
import { schemasOf } from './settings/setting.ts';
import { parseDuration, parseRetrySchedule } from './settings/value-schemas.ts';
import { resolveRelayTls, type RelayTlsSettings } from './smtp/tls-policy.ts';
import { resolveTemporalTls } from './settings/temporal-tls.ts';
import { egressSettings } from './settings/egress-pools.ts';

export { parseDuration, parseRetrySchedule };

/**
 * The one reader of `process.env`. The settings are declared in src/settings/ (variable,
 * schema with its default, description); here they are parsed, checked against each other
 * and shaped into the `Config` the services take. Every setting has a development default; in
 * production (`NODE_ENV=production`) the settings that must not silently default are required.
 */

const EnvSchema = v.object(schemasOf(SERVER_SETTINGS));

export type Env = v.InferOutput<typeof EnvSchema>;

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/**
 * The settings production must be given (their defaults are development values: localhost,
 * `*.herald.localhost`, the dev mail sink), in declaration order: every one missing, at once.
 */
function missingInProduction(source: NodeJS.ProcessEnv, env: Env): string[] {
  const parsed = env as unknown as Record<string, unknown>;
  return Object.entries(SERVER_SETTINGS).flatMap(([name, declared]) => {
    const condition = declared.requiredInProduction;
    if (condition === undefined || source[name]) return [];
    if (condition === true) return [`${name}: required in production`];
    const [other, value] = condition.with;
    return parsed[other] === value ? [`${name}: required in production with ${other}=${value}`] : [];
  });
}

function parseEnvironment<TSchema extends v.GenericSchema>(schema: TSchema, source: NodeJS.ProcessEnv): v.InferOutput<TSchema> {
  const result = v.safeParse(schema, source);
  if (!result.success) {
    throw new ConfigError(result.issues.map((issue) => `${v.getDotPath(issue) ?? 'env'}: ${issue.message}`));
  }
  return result.output;
}

/** Parses an environment (default: `process.env`) into a typed config, or throws ConfigError. */
export function loadConfig(source: NodeJS.ProcessEnv = process.env): Config {
  const env = parseEnvironment(EnvSchema, source);
  if (env.NODE_ENV === 'production') {
    const missing = missingInProduction(source, env);
    if (missing.length > 0) throw new ConfigError(missing);
  }
  return buildConfig(env);
}

/** Takes the variables left over once every one has been named: a compile error when one is not. */
function noSettingLeft(unread: Record<string, never>): Record<string, never> {
  return unread;
}

/**
 * The one place parsed settings are checked against each other and become the `Config` shape
 * (and with it its type), or a ConfigError. The destructuring names every setting: leave one
 * out and `noSettingLeft` does not compile; name one and not use it and lint refuses it.
 */
function buildConfig(env: Env) {
  const {
    NODE_ENV,
    LOG_LEVEL,
    DATABASE_URL,
    DATABASE_POOL_MAX,
    REDIS_URL,
    REDIS_KEY_PREFIX,
    TEMPORAL_ADDRESS,
    TEMPORAL_NAMESPACE,
    TEMPORAL_TLS,
    TEMPORAL_TLS_CA_FILE,
    TEMPORAL_TLS_CERT_FILE,
    TEMPORAL_TLS_KEY_FILE,
    TEMPORAL_TLS_SERVER_NAME,
    TEMPORAL_API_KEY,
    TEMPORAL_SEARCH_ATTRIBUTES,
    TEMPORAL_UI_URL,
    HERALD_WORKFLOW_BUNDLE,
    TEMPORAL_TASK_QUEUE_PREFIX,
    PORT,
    HOST,
    API_PROCESSES,
    PUBLIC_URL,
    TRUSTED_PROXIES,
    SMTP_PORT,
    SMTP_HOST,
    METRICS_PORT,
    METRICS_HOST,
    SMTP_SUBMISSION_PORT,
    SMTP_SUBMISSION_HOST,
    SMTP_SUBMISSIONS_PORT,
    SMTP_TLS_KEY_FILE,
    SMTP_TLS_CERT_FILE,
    SMTP_RELAY_URL,
    SMTP_RELAY_TLS,
    SMTP_RELAY_CA_FILE,
    SANDBOX_RELAY_URL,
    SMTP_DELIVERY,
    SMTP_HELO_NAME,
    SMTP_DIRECT_PORT,
    SMTP_DIRECT_POOL_SIZE,
    SMTP_DIRECT_RATE_PER_MINUTE,
    SMTP_DESTINATION_CONNECTIONS,
    SMTP_DESTINATION_RATE_PER_MINUTE,
    SMTP_DESTINATION_BACKOFF,
    SMTP_DESTINATION_BACKOFF_MAX,
    SMTP_DIRECT_TLS,
    SMTP_MTA_STS,
    SMTP_MTA_STS_PORT,
    SMTP_DIRECT_CA_FILE,
    SMTP_DIRECT_ALLOW_PRIVATE_TARGETS,
    EGRESS_POOLS,
    EGRESS_DEFAULT_POOL,
    EGRESS_STREAM_POOLS,
    BOUNCE_DOMAIN,
    SPF_INCLUDE,
    BLOB_STORE,
    BLOB_DIR,
    S3_BUCKET,
    S3_ENDPOINT,
    S3_REGION,
    S3_ACCESS_KEY_ID,
    S3_SECRET_ACCESS_KEY,
    S3_FORCE_PATH_STYLE,
    S3_KEY_PREFIX,
    HERALD_ENCRYPTION_KEY,
    HERALD_ENCRYPTION_KEYS_PREVIOUS,
    WEBHOOK_RETRY_SCHEDULE,
    WEBHOOK_ALLOW_PRIVATE_TARGETS,
    WEBHOOK_ENDPOINT_CONCURRENCY,
    QUEUE_DRAIN_LINGER_MS,
    EMAIL_RETRY_SCHEDULE,
    EMAIL_RETRY_WINDOW,
    SMTP_RELAY_FINAL_HOP,
    INBOUND_DRAIN_CONCURRENCY,
    SMTP_RELAY_POOL_SIZE,
    SMTP_RELAY_MAX_CONNECTIONS,
    SEND_HANDOFF_WAIT_MS,
    DNS_SERVERS,
    CONTACT_DNS_CHECK,
    DNS_TIMEOUT_MS,
    INBOUND_RAW_RETENTION_DAYS,
    RETENTION_EMAILS_DAYS,
    RETENTION_WEBHOOKS_DAYS,
    RETENTION_INBOUND_DAYS,
    RETENTION_CONTACT_IMPORTS_DAYS,
    RETENTION_BATCH_SIZE,
    DNS_CACHE_TTL_SECONDS,
    ...unread
  } = env;
  noSettingLeft(unread);
  const production = NODE_ENV === 'production';
  const tlsFiles = Boolean(SMTP_TLS_KEY_FILE && SMTP_TLS_CERT_FILE);
  if (SMTP_SUBMISSIONS_PORT && SMTP_SUBMISSIONS_PORT !== 'off' && !tlsFiles) {
    throw new ConfigError(['SMTP_SUBMISSIONS_PORT: implicit TLS needs SMTP_TLS_KEY_FILE and SMTP_TLS_CERT_FILE']);
  }
  const submissionsPort = SMTP_SUBMISSIONS_PORT ?? (production && tlsFiles ? '465' : 'off');
  const relayTls = resolveRelayTls({ url: SMTP_RELAY_URL, policy: SMTP_RELAY_TLS || undefined, caFile: SMTP_RELAY_CA_FILE || undefined });
  if (typeof relayTls === 'string') throw new ConfigError([relayTls]);
  const sandboxTls = SANDBOX_RELAY_URL ? resolveRelayTls({ url: SANDBOX_RELAY_URL }) : null;
  if (typeof sandboxTls === 'string') throw new ConfigError([`SANDBOX_RELAY_URL: ${sandboxTls}`]);
  const directTls: RelayTlsSettings = { policy: SMTP_DIRECT_TLS, source: 'host' };
  const previousKeys = HERALD_ENCRYPTION_KEYS_PREVIOUS.split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => Buffer.from(entry, 'base64'));
  if (previousKeys.length > 0 && !HERALD_ENCRYPTION_KEY) {
    throw new ConfigError(['HERALD_ENCRYPTION_KEYS_PREVIOUS: needs HERALD_ENCRYPTION_KEY (the newest key, which seals)']);
  }
  const encryptionKey = HERALD_ENCRYPTION_KEY ? Buffer.from(HERALD_ENCRYPTION_KEY, 'base64') : undefined;
  const temporalTls = resolveTemporalTls({
    tls: TEMPORAL_TLS,
    caFile: TEMPORAL_TLS_CA_FILE,
    certFile: TEMPORAL_TLS_CERT_FILE,
    keyFile: TEMPORAL_TLS_KEY_FILE,
    serverName: TEMPORAL_TLS_SERVER_NAME,
    apiKey: TEMPORAL_API_KEY,
  });
  if (Array.isArray(temporalTls)) throw new ConfigError(temporalTls);
  const blobStore = blobStoreSettings({
    BLOB_STORE,
    BLOB_DIR,
    S3_BUCKET,
    S3_ENDPOINT,
    S3_REGION,
    S3_ACCESS_KEY_ID,
    S3_SECRET_ACCESS_KEY,
    S3_FORCE_PATH_STYLE,
    S3_KEY_PREFIX,
  });
  if (Array.isArray(blobStore)) throw new ConfigError(blobStore);
  const egress = egressSettings({ EGRESS_POOLS, EGRESS_DEFAULT_POOL, EGRESS_STREAM_POOLS });
  if (Array.isArray(egress)) throw new ConfigError(egress);
  const prefix = TEMPORAL_TASK_QUEUE_PREFIX;
  return {
    env: NODE_ENV,
    logLevel: LOG_LEVEL,
    database: { url: DATABASE_URL, poolMax: DATABASE_POOL_MAX },
    redis: { url: REDIS_URL, keyPrefix: REDIS_KEY_PREFIX },
    temporal: {
      address: TEMPORAL_ADDRESS,
      namespace: TEMPORAL_NAMESPACE,
      /** TLS with the frontend (null: plaintext); its files are read when a process connects. */
      tls: temporalTls,
      /** Temporal Cloud's API key (TEMPORAL_API_KEY); absent when unset. */
      ...(TEMPORAL_API_KEY ? { apiKey: TEMPORAL_API_KEY } : {}),
      /** At the worker's start: register missing search attributes, only check them, or neither. */
      searchAttributes: TEMPORAL_SEARCH_ATTRIBUTES,
      /** The one task queue of every workflow and activity (`<prefix>-main`). */
      taskQueue: `${prefix}-main`,
      /**
       * The per-pipeline queues of earlier versions (`<prefix>-email`, `-webhooks`, `-inbound`):
       * a worker polls one only while runs started there before an upgrade are still open.
       */
      /** Prefix of Herald's Temporal Schedule ids, so test runs sharing a server never collide. */
      schedulePrefix: prefix,
      /** A prebuilt workflow bundle to load instead of bundling at start (HERALD_WORKFLOW_BUNDLE). */
      ...(HERALD_WORKFLOW_BUNDLE ? { workflowBundlePath: HERALD_WORKFLOW_BUNDLE } : {}),
      /** The Temporal UI (TEMPORAL_UI_URL), linked from the dashboard; absent when unset. */
      ...(TEMPORAL_UI_URL ? { uiUrl: TEMPORAL_UI_URL.replace(/\/+$/, '') } : {}),
    },
    http: {
      port: PORT,
      host: HOST,
      publicUrl: (PUBLIC_URL ?? `http://127.0.0.1:${PORT}`).replace(/\/+$/, ''),
      /** How many api processes `herald api` runs on this port (node:cluster above 1). */
      processes: API_PROCESSES,
      /** TRUSTED_PROXIES's entries (src/http/trusted-proxies.ts), empty when none. */
      trustedProxies: TRUSTED_PROXIES.split(',')
        .map((entry) => entry.trim())
        .filter(Boolean),
    },
    /** Prometheus metrics at http://<host>:<port>/metrics (port 0: not served). */
    metrics: { port: METRICS_PORT, host: METRICS_HOST },
    /** How many days each kind of record is kept once settled (0: forever), and rows per deleting transaction (docs/retention.md). */
    retention: {
      days: {
        emails: RETENTION_EMAILS_DAYS,
        webhooks: RETENTION_WEBHOOKS_DAYS,
        inbound: RETENTION_INBOUND_DAYS,
        contactImports: RETENTION_CONTACT_IMPORTS_DAYS,
      },
      batchSize: RETENTION_BATCH_SIZE,
    },
    smtp: {
      port: SMTP_PORT,
      host: SMTP_HOST,
      /** How long the raw bytes of an ingested inbound message are kept (0: forever). */
      rawRetentionMs: INBOUND_RAW_RETENTION_DAYS * 24 * 60 * 60 * 1000,
      ...(SMTP_TLS_KEY_FILE ? { tlsKeyFile: SMTP_TLS_KEY_FILE } : {}),
      ...(SMTP_TLS_CERT_FILE ? { tlsCertFile: SMTP_TLS_CERT_FILE } : {}),
    },
    /**
     * The SMTP submission front door (null: off): STARTTLS with the smtp TLS files on `port`,
     * implicit TLS on `implicitTlsPort` when set; AUTH with an API key.
     */
    submission:
      SMTP_SUBMISSION_PORT === 'off'
        ? null
        : {
            port: Math.min(65535, Number(SMTP_SUBMISSION_PORT ?? (production ? '587' : DEV_SUBMISSION_PORT))),
            host: SMTP_SUBMISSION_HOST ?? SMTP_HOST,
            ...(submissionsPort !== 'off' ? { implicitTlsPort: Math.min(65535, Number(submissionsPort)) } : {}),
          },
    /**
     * How messages leave: through the relay (SMTP_RELAY_URL), or straight to each recipient
     * domain's MX hosts (`direct`: EHLO as `heloName`, `port` 25, at most `poolSize` connections
     * and `ratePerMinute` messages per destination host, STARTTLS as `tls` says; MTA-STS
     * honoured on its HTTPS port or null when off; `allowPrivateTargets`: MX and policy hosts
     * may be on addresses the address policy forbids).
     */
    delivery:
      SMTP_DELIVERY === 'direct'
        ? {
            mode: 'direct' as const,
            heloName: SMTP_HELO_NAME ?? hostname().toLowerCase(),
            port: SMTP_DIRECT_PORT,
            poolSize: SMTP_DIRECT_POOL_SIZE,
            ratePerMinute: SMTP_DIRECT_RATE_PER_MINUTE,
            /** Per-destination (MX rollup) limits shared through Redis: src/modules/outbound/shaping/. */
            shaping: {
              connections: SMTP_DESTINATION_CONNECTIONS,
              ratePerMinute: SMTP_DESTINATION_RATE_PER_MINUTE,
              backoff: {
                baseMs: parseDuration(SMTP_DESTINATION_BACKOFF) as number,
                maxMs: Math.max(parseDuration(SMTP_DESTINATION_BACKOFF) as number, parseDuration(SMTP_DESTINATION_BACKOFF_MAX) as number),
              },
            },
            tls: directTls,
            mtaSts: SMTP_MTA_STS === 'enforce' ? { port: SMTP_MTA_STS_PORT } : null,
            ...(SMTP_DIRECT_CA_FILE ? { caFile: SMTP_DIRECT_CA_FILE } : {}),
            allowPrivateTargets: SMTP_DIRECT_ALLOW_PRIVATE_TARGETS,
          }
        : { mode: 'relay' as const },
    /** Egress IP pools: the source addresses deliveries bind to (EGRESS_*; src/modules/egress/). */
    egress,
    relayUrl: SMTP_RELAY_URL,
    /** SANDBOX_RELAY_URL and its TLS (the URL's default policy); null: the in-process simulator. */
    sandboxRelay: SANDBOX_RELAY_URL && sandboxTls ? { url: SANDBOX_RELAY_URL, tls: sandboxTls } : null,
    /** TLS with the relay: policy (SMTP_RELAY_TLS or the default for the URL) and extra trusted CAs. */
    relayTls,
    bounceDomain: BOUNCE_DOMAIN,
    /** The host sending domains must `include:` in their SPF record (SPF_INCLUDE). */
    spfInclude: SPF_INCLUDE,
    /** Where blobs live (BLOB_STORE, BLOB_DIR, S3_*): src/blob/open-blob-store.ts builds the store from it. */
    blobStore,
    /** The newest key (HERALD_ENCRYPTION_KEY): seals and signs. */
    ...(encryptionKey ? { encryptionKey } : {}),
    /** The key ring, newest first: every key that still opens a sealed value (empty without a key). */
    encryptionKeys: encryptionKey ? [encryptionKey, ...previousKeys] : [],
    webhooks: {
      retrySchedule: WEBHOOK_RETRY_SCHEDULE,
      /** WEBHOOK_RETRY_SCHEDULE in milliseconds: entry i is the delay before attempt i + 1. */
      retryScheduleMs: parseRetrySchedule(WEBHOOK_RETRY_SCHEDULE) as number[],
      allowPrivateTargets: WEBHOOK_ALLOW_PRIVATE_TARGETS,
      /** Requests in flight to one endpoint at most (WEBHOOK_ENDPOINT_CONCURRENCY). */
      endpointConcurrency: WEBHOOK_ENDPOINT_CONCURRENCY,
    },
    queues: {
      /** How long a queue drain (webhook endpoint, sending domain) waits for new rows once nothing is due before it returns. */
      drainLingerMs: QUEUE_DRAIN_LINGER_MS,
      /** Raw messages the inbound actor's drain ingests at once (parsing is CPU). */
      inboundConcurrency: INBOUND_DRAIN_CONCURRENCY,
    },
    sends: {
      /** Deferred recipients: entry 0 is the first attempt, then the delays; the last repeats. */
      retryScheduleMs: parseRetrySchedule(EMAIL_RETRY_SCHEDULE) as number[],
      /** How long deferred recipients are retried before email.failed (EMAIL_RETRY_WINDOW). */
      retryWindowMs: parseDuration(EMAIL_RETRY_WINDOW) as number,
      /** The relay is the final hop (the dev sink): accepted means delivered. Direct delivery hands each message to the recipient's own MX. */
      relayIsFinalHop: SMTP_DELIVERY === 'direct' || SMTP_RELAY_FINAL_HOP,
      relayPoolSize: SMTP_RELAY_POOL_SIZE,
      /** The relay pool grows from relayPoolSize up to this while the relay accepts (never below relayPoolSize). */
      relayMaxConnections: Math.max(SMTP_RELAY_POOL_SIZE, SMTP_RELAY_MAX_CONNECTIONS),
      /** How long POST /outbox/emails waits for the hand-off to the relay before answering 202. */
      handoffWaitMs: SEND_HANDOFF_WAIT_MS,
    },
    dns: {
      /** Resolvers for contact-quality and domain checks; empty means the system's resolvers. */
      servers: DNS_SERVERS.split(',')
        .map((server) => server.trim())
        .filter(Boolean),
      timeoutMs: DNS_TIMEOUT_MS,
      checkContacts: CONTACT_DNS_CHECK,
      /** How long inbound authentication reuses a DNS answer (0: never). */
      cacheTtlMs: DNS_CACHE_TTL_SECONDS * 1000,
    },
  };
}

/** What the services are configured with: built by `buildConfig` from the parsed settings. */
export type Config = ReturnType<typeof buildConfig>;

const DevEnvSchema = v.object({ ...SERVER_SETTINGS_READ_BY_DEV, ...schemasOf(DEV_SETTINGS) });

export type DevEnv = v.InferOutput<typeof DevEnvSchema>;

/**
 * Settings of the developer tooling (`herald dev`, `herald test`): which services were
 * configured explicitly (and must be used as they are) and where caches live.
 */
export function loadDevEnv(source: NodeJS.ProcessEnv = process.env): DevEnv {
  return parseEnvironment(DevEnvSchema, source);
}
