import type * as v from 'valibot';
import { setting } from './setting.ts';
import { DEV_SUBMISSION_PORT, SERVER_SETTINGS } from './server-settings.ts';
import { flag, optionalText, optionalUrl, port, text } from './value-schemas.ts';

/**
 * The settings of the launcher and the developer tooling only (`herald`, `herald dev`,
 * `herald test`, the benchmarks), in the order of the README's second configuration table.
 */
export const DEV_SETTINGS = {
  HERALD_WORKER_HEAP_MB: setting(
    text('512'),
    "the worker's V8 heap limit (`--max-old-space-size`, set by `herald worker`/`all` and `npm start`); keeps its RSS near 460 MB under load instead of growing with Node's default limit",
  ),
  TEMPORAL_BIN: setting(optionalText(), 'a Temporal CLI to use; unset: one on `PATH`, else one built once into `HERALD_CACHE_DIR`'),
  SEAWEEDFS_BIN: setting(
    optionalText(),
    "a SeaweedFS `weed` binary for the tests' S3 server; unset: one built once into `HERALD_CACHE_DIR` (`herald test`)",
  ),
  HERALD_CACHE_DIR: setting(optionalText(), 'where build caches (the Temporal CLI, SeaweedFS) are kept, outside the clone', {
    computedDefault: '`$HOME/.cache/herald`',
  }),
  HERALD_DATA_DIR: setting(optionalText(), "`herald dev`'s data (PostgreSQL, Redis, `dev.env`)", { computedDefault: '`.data/`' }),
  HOME: setting(text('/tmp'), 'the home directory (for `HERALD_CACHE_DIR`)'),
  PATH: setting(text(''), 'where `redis-server` and `temporal` are looked for'),
  TEMPORAL_PORT: setting(port('7233'), "the dev Temporal server's port"),
  TEMPORAL_UI_PORT: setting(port('8233'), "the dev Temporal server's web UI port"),
  MAIL_SINK_HTTP_PORT: setting(port('8025'), "the mail sink's viewer page; the next free port is taken when this one is busy"),
  HERALD_DEV_SPLIT: setting(flag(false), '`npm start` runs api, worker and smtp as three child processes instead of in its own process'),
};

/**
 * Server settings the tooling reads too, with the schema it reads them by. A URL or address
 * it finds set names a service to use as it is; unset, `herald dev` starts its own.
 */
export const SERVER_SETTINGS_READ_BY_DEV = {
  DATABASE_URL: optionalUrl(),
  REDIS_URL: optionalUrl(),
  TEMPORAL_ADDRESS: optionalText(),
  PORT: SERVER_SETTINGS.PORT.schema,
  SMTP_PORT: SERVER_SETTINGS.SMTP_PORT.schema,
  /** The submission front door; the next free port when this one is busy. */
  SMTP_SUBMISSION_PORT: port(DEV_SUBMISSION_PORT),
  /** Set to a real relay to send through it; unset or loopback, `herald dev` runs the mail sink there. */
  SMTP_RELAY_URL: optionalUrl(),
  /** Shown in the banner with the policy they give the relay (the worker reads them itself). */
  SMTP_RELAY_TLS: SERVER_SETTINGS.SMTP_RELAY_TLS.schema,
  SMTP_RELAY_CA_FILE: SERVER_SETTINGS.SMTP_RELAY_CA_FILE.schema,
  /** Prometheus metrics of `herald all` (split: worker, api, smtp on this port and the next two). */
  METRICS_PORT: SERVER_SETTINGS.METRICS_PORT.schema,
} satisfies { [K in keyof typeof SERVER_SETTINGS]?: v.GenericSchema };
