import { AppError } from '../errors.ts';

/**
 * Whether an error means PostgreSQL cannot be reached or cannot serve right now (down,
 * restarting, starting up, shutting down, out of connection slots) rather than that the
 * statement was wrong. Such a failure passes when the server is back, so Herald answers it as
 * temporary: 503 with Retry-After over HTTP, 4xx over SMTP, a retried activity in the worker.
 *
 * The error may come from pg itself (a socket errno or a server SQLSTATE), from pg-pool (its
 * connect timeout), from MikroORM's DriverException (which copies the pg error's own fields),
 * or wrapped by Kysely, Node (AggregateError of a dual-stack connect) or an `Error.cause`
 * chain: all of them are looked through.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  return someLink(error, 0, isUnavailableLink);
}

/** How long a client should wait before retrying a request refused for the outage. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/** The refusal of a request that needed PostgreSQL while it was unavailable. */
export function databaseUnavailableError(): AppError {
  return new AppError(
    'service_unavailable',
    'The database is temporarily unavailable; retry after the Retry-After interval.',
    {
      reason: 'DATABASE_UNAVAILABLE',
    },
    { retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS },
  );
}

/** Socket errnos of a connection that could not be made or was cut. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'EAI_AGAIN',
  'ENOENT', // a Unix socket path that is gone while the server is down
]);

/**
 * SQLSTATEs of an unavailable server: class 08 (connection exception), 57P01 admin_shutdown,
 * 57P02 crash_shutdown, 57P03 cannot_connect_now (starting up, shutting down, in recovery),
 * 53300 too_many_connections. Other class-57 codes (57014 query_canceled) are the statement's.
 */
const SERVER_STATES = new Set(['57P01', '57P02', '57P03', '53300']);

/** What pg and pg-pool say, without a code, when a connection dies or cannot be had in time. */
const DRIVER_MESSAGES = [
  /^Connection terminated( unexpectedly| due to connection timeout)?$/,
  /^timeout exceeded when trying to connect$/,
  /^Client has encountered a connection error and is not queryable$/,
  /^Connection terminated due to connection timeout/,
];

function isUnavailableLink(link: object): boolean {
  const { code, message } = link as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (SOCKET_CODES.has(code) || SERVER_STATES.has(code)) return true;
    if (/^08[0-9A-Z]{3}$/.test(code)) return true;
  }
  return typeof message === 'string' && DRIVER_MESSAGES.some((pattern) => pattern.test(message));
}

const MAX_DEPTH = 6;

/** Whether `test` holds for `error` or anything it wraps (cause, previous, errors[] of an AggregateError). */
function someLink(error: unknown, depth: number, test: (link: object) => boolean): boolean {
  if (depth > MAX_DEPTH || typeof error !== 'object' || error === null) return false;
  if (test(error)) return true;
  const { cause, previous, errors } = error as { cause?: unknown; previous?: unknown; errors?: unknown };
  if (someLink(cause, depth + 1, test) || someLink(previous, depth + 1, test)) return true;
  return Array.isArray(errors) && errors.some((inner) => someLink(inner, depth + 1, test));
}
