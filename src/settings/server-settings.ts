import * as v from 'valibot';
import { parseTrustedProxies } from '../http/trusted-proxies.ts';
import { SMTP_TLS_POLICIES } from '../smtp/tls-policy.ts';
import { parseEgressPools, parseStreamPools } from './egress-pools.ts';
import { setting } from './setting.ts';
import { SEARCH_ATTRIBUTE_MODES } from './temporal-tls.ts';
import {
  checkedBy,
  concurrency,
  daysOrOff,
  encryptionKey,
  encryptionKeyList,
  flag,
  hostName,
  oneOf,
  optionalText,
  optionalUrl,
  parseDuration,
  parseRetrySchedule,
  port,
  portOrOff,
  text,
  url,
  wholeNumber,
} from './value-schemas.ts';

/** The submission port outside production; `herald dev` starts there too. */
export const DEV_SUBMISSION_PORT = '2587';

/**
 * The settings of Herald's services (`loadConfig` in src/config.ts), in the order of the
 * README's configuration table. Each is declared here only: add one here, read it in
 * `buildConfig`, and the README row test/unit/config-docs.test.ts asks for.
 */
export const SERVER_SETTINGS = {
  NODE_ENV: setting(oneOf(['development', 'production', 'test'], 'development'), '`development`, `test` or `production`'),
  LOG_LEVEL: setting(
    oneOf(['debug', 'info', 'warn', 'error', 'silent'], 'info'),
    '`debug`, `info`, `warn`, `error`, `silent` (JSON lines on stderr)',
  ),
  DATABASE_URL: setting(url('postgres://postgres@127.0.0.1:5432/herald'), 'PostgreSQL', { requiredInProduction: true }),
  DATABASE_POOL_MAX: setting(
    v.pipe(v.optional(v.string(), '10'), v.transform(Number), v.integer(), v.minValue(1)),
    'connections per process',
  ),
  REDIS_URL: setting(url('redis://127.0.0.1:6379'), 'Redis', { requiredInProduction: true }),
  REDIS_KEY_PREFIX: setting(text('herald:'), 'prefix of every Redis key'),
  TEMPORAL_ADDRESS: setting(text('127.0.0.1:7233'), 'Temporal frontend', { requiredInProduction: true }),
  TEMPORAL_NAMESPACE: setting(text('default'), 'Temporal namespace'),
  TEMPORAL_TLS: setting(
    flag(false),
    "TLS to the Temporal frontend, its certificate checked against the system's roots unless `TEMPORAL_TLS_CA_FILE` is set (docs/temporal.md); implied by any `TEMPORAL_TLS_*` file, `TEMPORAL_TLS_SERVER_NAME` or `TEMPORAL_API_KEY`",
  ),
  TEMPORAL_TLS_CA_FILE: setting(
    text(''),
    "PEM file of the authority that signed the frontend's certificate (a self-hosted cluster's own CA); implies TLS",
  ),
  TEMPORAL_TLS_CERT_FILE: setting(text(''), 'PEM file of the client certificate for mutual TLS, with `TEMPORAL_TLS_KEY_FILE`'),
  TEMPORAL_TLS_KEY_FILE: setting(text(''), "PEM file of that certificate's private key"),
  TEMPORAL_TLS_SERVER_NAME: setting(
    text(''),
    "the name the frontend's certificate must carry, when it is not the host of `TEMPORAL_ADDRESS` (sent as SNI)",
  ),
  TEMPORAL_API_KEY: setting(text(''), 'a Temporal Cloud API key, sent as `Authorization: Bearer …` on every call; implies TLS'),
  TEMPORAL_SEARCH_ATTRIBUTES: setting(
    oneOf(SEARCH_ATTRIBUTE_MODES, 'register'),
    "what the worker does at start when Herald's search attributes are missing from the namespace: `register` them (stops with the commands to run when the cluster refuses), `check` only (stops with the commands), `off` (does not look)",
  ),
  TEMPORAL_UI_URL: setting(optionalUrl(), "the Temporal Web UI, linked from the dashboard (a workspace's workflows); `npm start` sets it"),
  HERALD_WORKFLOW_BUNDLE: setting(
    optionalText(),
    'a prebuilt workflow bundle for the worker to load (`herald dev` builds one per source version); unset: `.build/` if there, else bundled at start',
  ),
  TEMPORAL_TASK_QUEUE_PREFIX: setting(
    v.optional(v.pipe(v.string(), v.regex(/^[a-z0-9-]+$/, 'must be lower-case letters, digits and dashes')), 'herald'),
    'the task queue is `<prefix>-main` and the inbound actor `inbound-intake:<prefix>`',
  ),
  PORT: setting(port('3000'), 'API listen port'),
  HOST: setting(text('0.0.0.0'), 'API listen address'),
  API_PROCESSES: setting(
    v.pipe(v.optional(v.string(), '1'), v.transform(Number), v.integer(), v.minValue(1), v.maxValue(64)),
    'api processes `herald api` runs on `PORT` (node:cluster: they share the port, one that dies is replaced, `METRICS_PORT` serves their metrics summed); each has its own pool of `DATABASE_POOL_MAX`',
  ),
  PUBLIC_URL: setting(optionalUrl(), 'base URL clients reach: upload URLs, `docs_url`', {
    computedDefault: '`http://127.0.0.1:$PORT`',
    requiredInProduction: true,
  }),
  TRUSTED_PROXIES: setting(
    checkedBy(parseTrustedProxies, ''),
    "reverse proxies (comma-separated addresses or CIDRs, e.g. `10.0.0.0/8, ::1`) whose `X-Forwarded-For` and `X-Forwarded-Proto` the api believes; the client is then the right-most address that is not one of them. Empty: the direct peer is the client and the connection's scheme is the scheme (docs/security.md)",
  ),
  SMTP_PORT: setting(port('2525'), 'inbound SMTP port'),
  SMTP_HOST: setting(text('0.0.0.0'), 'inbound SMTP listen address'),
  METRICS_PORT: setting(
    port('9464'),
    'Prometheus metrics at `http://<METRICS_HOST>:<port>/metrics` from every process (`0`: off; `npm start` prints the URL)',
  ),
  METRICS_HOST: setting(text('127.0.0.1'), 'metrics listen address (`0.0.0.0` in a container that Prometheus scrapes)'),
  SMTP_SUBMISSION_PORT: setting(
    portOrOff(),
    'the SMTP submission front door of `herald smtp` (AUTH with an API key; docs/smtp-submission.md); `0` any free port, `off` none',
    { computedDefault: `\`587\` (production), \`${DEV_SUBMISSION_PORT}\`` },
  ),
  SMTP_SUBMISSION_HOST: setting(optionalText(), 'its listen address', { computedDefault: '`SMTP_HOST`' }),
  SMTP_SUBMISSIONS_PORT: setting(
    portOrOff(),
    'submission over implicit TLS (RFC 8314); needs `SMTP_TLS_KEY_FILE` and `SMTP_TLS_CERT_FILE`',
    { computedDefault: '`465` (production with TLS files), `off`' },
  ),
  SMTP_TLS_KEY_FILE: setting(
    optionalText(),
    'PEM file of the private key; STARTTLS is offered only when it and `SMTP_TLS_CERT_FILE` are set',
  ),
  SMTP_TLS_CERT_FILE: setting(optionalText(), 'PEM file of the certificate chain, with `SMTP_TLS_KEY_FILE`'),
  SMTP_RELAY_URL: setting(
    url('smtp://127.0.0.1:2526'),
    'outbound relay (`smtp://` or `smtps://`, optional `user:pass@`); `npm start` runs the dev mail sink there',
    { requiredInProduction: { with: ['SMTP_DELIVERY', 'relay'] } },
  ),
  SMTP_RELAY_TLS: setting(
    oneOf([...SMTP_TLS_POLICIES, ''], ''),
    "TLS with the relay: `opportunistic` (STARTTLS when offered, certificate not checked), `verify` (TLS required, certificate valid for the relay's host name), `none` (never upgrade); see docs/local-postfix.md",
    { computedDefault: '`opportunistic` for a relay on loopback; `verify` for `smtps://`, any other host, or with `SMTP_RELAY_CA_FILE`' },
  ),
  SMTP_RELAY_CA_FILE: setting(text(''), "PEM file of CAs trusted for the relay's certificate (besides the public roots); implies `verify`"),
  SANDBOX_RELAY_URL: setting(
    optionalUrl(),
    'where test keys\' mail goes (an SMTP URL); unset: the worker\'s in-process mailbox simulator. Test-key mail never goes to `SMTP_RELAY_URL` or an MX; `npm start` points this at its mail sink (docs/sending.md, "Testing your integration")',
  ),
  SMTP_DELIVERY: setting(
    oneOf(['relay', 'direct'], 'relay'),
    "`relay`: every message through `SMTP_RELAY_URL`; `direct`: to each recipient domain's MX (`docs/direct-delivery.md`), acceptance by the MX counts as delivered",
  ),
  SMTP_HELO_NAME: setting(
    v.optional(hostName(false)),
    'the EHLO name in direct delivery: a name whose A record and PTR match the sending IP',
    { computedDefault: "this machine's host name", requiredInProduction: { with: ['SMTP_DELIVERY', 'direct'] } },
  ),
  SMTP_DIRECT_PORT: setting(port('25', 1), 'the port of remote MX hosts (another only for tests and private networks)'),
  SMTP_DIRECT_POOL_SIZE: setting(wholeNumber('3', 1, 50), 'connections to one destination MX host at most, per worker'),
  SMTP_DIRECT_RATE_PER_MINUTE: setting(
    wholeNumber('0', 0, 100_000),
    'messages per minute to one destination MX host at most, per worker (`0`: no limit)',
  ),
  SMTP_DESTINATION_CONNECTIONS: setting(
    wholeNumber('10', 1, 1000),
    'direct delivery: SMTP transactions in flight to one destination at most, shared by every worker through Redis; a destination is its MX rollup (one budget for all domains whose MX hosts belong to one provider: gmail.com and googlemail.com are one Google); halved on 421/4xx, grown back as it accepts (docs/deliverability.md, "Per-destination shaping")',
  ),
  SMTP_DESTINATION_RATE_PER_MINUTE: setting(
    wholeNumber('0', 0, 1_000_000),
    'direct delivery: messages per minute to one destination (MX rollup) at most, across every worker (`0`: no limit)',
  ),
  SMTP_DESTINATION_BACKOFF: setting(
    checkedBy(parseDuration, '30s'),
    'direct delivery: the pause of a destination after a 421/4xx or no answer, doubling with each further refusal; its messages are deferred meanwhile, other destinations keep flowing',
  ),
  SMTP_DESTINATION_BACKOFF_MAX: setting(checkedBy(parseDuration, '10m'), 'the longest such pause'),
  SMTP_DIRECT_TLS: setting(
    oneOf(SMTP_TLS_POLICIES, 'opportunistic'),
    'STARTTLS with remote MX hosts: `opportunistic` (use it when offered), `verify` (refuse a host without a valid certificate for its name), `none`',
  ),
  SMTP_MTA_STS: setting(
    oneOf(['enforce', 'off'], 'enforce'),
    "honour destination domains' MTA-STS policies (RFC 8461) in direct delivery: only the MX hosts a policy names, over verified TLS; `off` to ignore them",
  ),
  SMTP_MTA_STS_PORT: setting(port('443', 1), 'the HTTPS port of MTA-STS policy hosts (another only for tests)'),
  SMTP_DIRECT_CA_FILE: setting(text(''), 'PEM of extra certificate authorities trusted for MX hosts and policy hosts (private networks)'),
  SMTP_DIRECT_ALLOW_PRIVATE_TARGETS: setting(
    flag(false),
    'direct delivery may connect to MX hosts and MTA-STS policy hosts on loopback/private/link-local addresses (the webhook address policy; the dev stack and tests turn it on); off, a domain whose MX hosts have only such addresses is deferred, then fails',
  ),
  EGRESS_POOLS: setting(
    checkedBy(parseEgressPools, ''),
    'named pools of this host\'s source addresses for outbound SMTP, `name=addr,addr;name=addr` (docs/deliverability.md, "Egress IP pools"); the worker refuses to start when one cannot be bound; empty: no pools',
  ),
  EGRESS_DEFAULT_POOL: setting(text(''), "the pool of a domain that picked none (empty: the host's default source address)"),
  EGRESS_STREAM_POOLS: setting(
    checkedBy(parseStreamPools, ''),
    'message stream → pool for domains that picked none, `stream=pool;stream=pool` (e.g. `broadcast=bulk`)',
  ),
  BOUNCE_DOMAIN: setting(
    text('bounces.herald.localhost'),
    'VERP return-path domain: its MX must point at `herald smtp` (docs/production.md, "DNS")',
    { requiredInProduction: true },
  ),
  SPF_INCLUDE: setting(v.optional(hostName(true), 'spf.herald.localhost'), 'the host customers `include:` in their SPF record', {
    requiredInProduction: true,
  }),
  BLOB_STORE: setting(
    oneOf(['filesystem', 's3'], 'filesystem'),
    'where blobs live (attachments, raw inbound mail, import files): `filesystem` (`BLOB_DIR`: one machine or a shared volume) or `s3` (an S3-compatible bucket every api, worker and smtp process reaches; docs/blob-storage.md)',
  ),
  BLOB_DIR: setting(
    text('.data/blobs'),
    "the filesystem blob store's directory (`BLOB_STORE=filesystem`); empty: no blob store (uploads and attachments answer 503, inbound mail 451)",
  ),
  S3_BUCKET: setting(text(''), 'the bucket of `BLOB_STORE=s3` (it must exist: every process checks it at start)'),
  S3_ENDPOINT: setting(
    optionalUrl(),
    'the S3 API of an S3-compatible server (SeaweedFS, Ceph, R2, …), e.g. `http://seaweedfs:8333`; unset: AWS S3 in `S3_REGION`',
  ),
  S3_REGION: setting(text('us-east-1'), 'the region requests are signed for (any value most S3-compatible servers accept)'),
  S3_ACCESS_KEY_ID: setting(
    text(''),
    'the access key of `BLOB_STORE=s3`, with `S3_SECRET_ACCESS_KEY`; both empty: the AWS default credential chain (`AWS_*` variables, instance or task role)',
  ),
  S3_SECRET_ACCESS_KEY: setting(text(''), 'its secret key'),
  S3_FORCE_PATH_STYLE: setting(
    flag(false),
    'address the bucket in the path (`http://host/bucket/key`) instead of the host name; most S3-compatible servers need it',
  ),
  S3_KEY_PREFIX: setting(text(''), 'put before every key (e.g. `herald/`), so one bucket can hold several installations'),
  HERALD_ENCRYPTION_KEY: setting(
    encryptionKey(),
    '32 bytes, base64 (`openssl rand -base64 32`), generated once and kept: seals webhook secrets and DKIM keys, signs links; every process refuses to start when it does not match the database (docs/production.md, "Key rotation")',
    { requiredInProduction: true },
  ),
  HERALD_ENCRYPTION_KEYS_PREVIOUS: setting(
    encryptionKeyList(),
    'older keys (comma-separated, newest first) that still open what they sealed and still verify the links they signed (unsubscribe, tracking, upload URLs, bounce addresses), after a rotation: `HERALD_ENCRYPTION_KEY` seals and signs everything new; `herald admin encryption re-encrypt` moves the sealed rest, then drop them (old links stop working)',
  ),
  WEBHOOK_RETRY_SCHEDULE: setting(
    checkedBy(parseRetrySchedule, '0s,5s,30s,2m,10m,30m,1h,2h,4h,8h,12h,24h,24h'),
    'webhook attempts: the first at once, then each delay after the previous one (units `ms`, `s`, `m`, `h`, `d`; at most 30, each at most 7 days)',
  ),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: setting(flag(false), 'allow loopback/private webhook targets (the dev stack and tests turn it on)'),
  WEBHOOK_ENDPOINT_CONCURRENCY: setting(concurrency('8'), 'requests in flight to one webhook endpoint at most (1–64)'),
  QUEUE_DRAIN_LINGER_MS: setting(
    wholeNumber('2000', 0, 60_000),
    "how long a queue drain (a webhook endpoint's, a sending domain's, the inbound actor's) waits for new rows once nothing is due before its activity returns (0–60000)",
  ),
  EMAIL_RETRY_SCHEDULE: setting(
    checkedBy(parseRetrySchedule, '0s,1m,5m,15m,30m,1h,2h,4h'),
    'attempts for deferred (4xx) recipients: the first at once, then these delays; the last delay repeats',
  ),
  EMAIL_RETRY_WINDOW: setting(checkedBy(parseDuration, '72h'), 'how long deferred recipients are retried before `email.failed`'),
  SMTP_RELAY_FINAL_HOP: setting(flag(false), 'the relay is the final hop (the dev sink): acceptance counts as delivered'),
  INBOUND_DRAIN_CONCURRENCY: setting(
    concurrency('4'),
    "raw inbound messages the inbound actor's drain ingests at once (1–64; parsing is CPU-bound)",
  ),
  SMTP_RELAY_POOL_SIZE: setting(
    wholeNumber('5', 1, 100),
    'pooled SMTP connections to the relay per worker at first (1–100); the pool grows from there up to `SMTP_RELAY_MAX_CONNECTIONS`',
  ),
  SMTP_RELAY_MAX_CONNECTIONS: setting(
    wholeNumber('20', 1, 100),
    'connections to the relay per worker at most: the pool grows while the relay accepts and halves on 421/4xx or no answer (a value at or below `SMTP_RELAY_POOL_SIZE`: a fixed pool of that size)',
  ),
  SEND_HANDOFF_WAIT_MS: setting(
    wholeNumber('0', 0, 30_000),
    'opt-in: how long `POST /outbox/emails` waits for the first attempt so an outright rejection by the relay answers 502 (`0`: 202 as soon as the email is committed; at most 30000)',
  ),
  DNS_SERVERS: setting(
    v.optional(
      v.pipe(v.string(), v.regex(/^\s*$|^[0-9a-fA-F.:[\]]+(\s*,\s*[0-9a-fA-F.:[\]]+)*\s*$/, 'must be a comma-separated list of IP[:port]')),
      '',
    ),
    'comma-separated `IP[:port]` used for contact quality checks and domain verification',
    { computedDefault: 'system resolvers' },
  ),
  CONTACT_DNS_CHECK: setting(
    flag(true),
    "refuse contact addresses whose domain has no mail server (422 NO_MAIL_SERVER); `npm start` turns it off when the machine's DNS resolves nothing",
  ),
  DNS_TIMEOUT_MS: setting(wholeNumber('2000', 100, 30_000), 'per-query DNS timeout (two tries; 100–30000)'),
  INBOUND_RAW_RETENTION_DAYS: setting(
    wholeNumber('30', 0, 3650),
    'days the raw bytes of an ingested inbound message are kept (a daily Schedule deletes older ones; inbox messages and attachments stay); `0` keeps them forever (at most 3650)',
  ),
  RETENTION_EMAILS_DAYS: setting(
    daysOrOff('90', 3650),
    'days settled emails are kept, with their recipients, email events and open/click hits (docs/retention.md); `0` or `off` keeps them forever (at most 3650)',
  ),
  RETENTION_WEBHOOKS_DAYS: setting(
    daysOrOff('30', 3650),
    'days events and their settled webhook deliveries and attempts are kept; `0` or `off` keeps them forever (at most 3650)',
  ),
  RETENTION_INBOUND_DAYS: setting(
    daysOrOff('90', 3650),
    'days inbound messages and inbox messages are kept, with raw bytes and attachments; `0` or `off` keeps them forever (at most 3650)',
  ),
  RETENTION_CONTACT_IMPORTS_DAYS: setting(
    daysOrOff('30', 3650),
    'days finished contact imports are kept, with their file and error report; `0` or `off` keeps them forever (at most 3650)',
  ),
  RETENTION_BATCH_SIZE: setting(wholeNumber('1000', 10, 10_000), 'rows the retention loop deletes per transaction (10–10000)'),
  DNS_CACHE_TTL_SECONDS: setting(
    wholeNumber('60', 0, 3600),
    'how long inbound SPF/DKIM/DMARC checks reuse a DNS answer or a definite "no such record" (0–3600; `0` asks every time)',
  ),
};
