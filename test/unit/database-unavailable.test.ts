import { ConnectionException, DriverException, UniqueConstraintViolationException } from '@mikro-orm/core';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createDatabaseOutage } from '../../src/db/outage.ts';
import { databaseUnavailableError, isDatabaseUnavailable } from '../../src/db/unavailable.ts';
import { freePort } from '../../src/dev/ports.ts';
import { AppError } from '../../src/errors.ts';
import { toAppError } from '../../src/http/middleware/error-handler.ts';
import type { Logger } from '../../src/logger.ts';

/** An error as pg reports a server's ErrorResponse: a message and the SQLSTATE in `code`. */
const serverError = (code: string, message: string) => Object.assign(new Error(message), { code, severity: 'FATAL' });
const socketError = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code, errno: -111, syscall: 'connect' });

describe('isDatabaseUnavailable', () => {
  it.each([
    ['connection refused', socketError('ECONNREFUSED')],
    ['connection reset', socketError('ECONNRESET')],
    ['broken pipe', socketError('EPIPE')],
    ['57P03 starting up', serverError('57P03', 'the database system is starting up')],
    ['57P03 shutting down', serverError('57P03', 'the database system is shutting down')],
    ['57P03 in recovery', serverError('57P03', 'the database system is in recovery mode')],
    ['57P01 admin_shutdown', serverError('57P01', 'terminating connection due to administrator command')],
    ['57P02 crash_shutdown', serverError('57P02', 'terminating connection because of crash of another server process')],
    ['08006 connection_failure', serverError('08006', 'connection failure')],
    ['08001 unable to connect', serverError('08001', 'could not connect')],
    ['53300 too_many_connections', serverError('53300', 'sorry, too many clients already')],
    ['a connection that died mid-query', new Error('Connection terminated unexpectedly')],
    ['pg-pool connect timeout', new Error('timeout exceeded when trying to connect')],
    [
      'pg-pool connection timeout',
      new Error('Connection terminated due to connection timeout', { cause: new Error('Connection terminated') }),
    ],
    ['a client left broken', new Error('Client has encountered a connection error and is not queryable')],
    [
      'a dual-stack connect (AggregateError)',
      Object.assign(new AggregateError([socketError('ECONNREFUSED'), socketError('ECONNREFUSED')]), {}),
    ],
    ['MikroORM DriverException over pg', new DriverException(serverError('57P03', 'the database system is starting up'))],
    ['MikroORM ConnectionException', new ConnectionException(socketError('ECONNREFUSED'))],
    ['a wrapper with a cause (Kysely, services)', new Error('query failed', { cause: socketError('ECONNREFUSED') })],
  ])('is true for %s', (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it.each([
    ['a unique violation', new UniqueConstraintViolationException(serverError('23505', 'duplicate key value'))],
    ['a syntax error', serverError('42601', 'syntax error at or near "selec"')],
    ['a cancelled statement (57014)', serverError('57014', 'canceling statement due to statement timeout')],
    ['a serialization failure', serverError('40001', 'could not serialize access')],
    ['an AppError', new AppError('not_found', 'gone')],
    ['a plain error', new Error('database on fire')],
    ['a string', 'ECONNREFUSED'],
    ['null', null],
  ])('is false for %s', (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });

  it('is true for what pg really raises against a port where nothing listens', async () => {
    const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${await freePort()}/x` });
    const failure = await client.connect().then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).not.toBeNull();
    expect(isDatabaseUnavailable(failure)).toBe(true);
  });

  it('maps to 503 service_unavailable with a Retry-After (toAppError)', () => {
    const mapped = toAppError(serverError('57P03', 'the database system is starting up'));
    expect(mapped.status).toBe(503);
    expect(mapped.code).toBe('service_unavailable');
    expect(mapped.details).toEqual({ reason: 'DATABASE_UNAVAILABLE' });
    expect(mapped.retryAfterSeconds).toBe(databaseUnavailableError().retryAfterSeconds);
    expect(mapped.retryAfterSeconds).toBeGreaterThan(0);
    expect(toAppError(new Error('database on fire')).status).toBe(500);
  });
});

function recordingLogger() {
  const lines: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const logger: Logger = {
    debug: (message, fields) => lines.push({ level: 'debug', message, fields }),
    info: (message, fields) => lines.push({ level: 'info', message, fields }),
    warn: (message, fields) => lines.push({ level: 'warn', message, fields }),
    error: (message, fields) => lines.push({ level: 'error', message, fields }),
    child: () => logger,
  };
  return { logger, lines };
}

describe('createDatabaseOutage', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('logs an outage once when it begins and once when a probe finds PostgreSQL back, then runs the deferred tasks', async () => {
    vi.useFakeTimers({ now: new Date('2026-11-27T10:00:00Z') });
    const { logger, lines } = recordingLogger();
    let up = false;
    const outage = createDatabaseOutage({ logger, probe: () => Promise.resolve({ ok: up }), probeIntervalMs: 1_000 });
    const ran: string[] = [];

    for (let i = 0; i < 50; i += 1) expect(outage.report(socketError('ECONNREFUSED'))).toBe(true);
    expect(outage.report(new Error('database on fire'))).toBe(false);
    outage.whenBack(() => Promise.resolve(ran.push('release claim')));
    expect(outage.isDown()).toBe(true);
    await vi.advanceTimersByTimeAsync(3_000);
    expect(ran).toEqual([]);
    up = true;
    await vi.advanceTimersByTimeAsync(1_000);

    expect(outage.isDown()).toBe(false);
    expect(ran).toEqual(['release claim']);
    expect(lines.map((l) => `${l.level} ${l.message}`)).toEqual([
      'warn PostgreSQL unavailable since 2026-11-27T10:00:00.000Z',
      'info PostgreSQL back after 4.0 s',
    ]);
    expect(lines[1]!.fields).toMatchObject({ failures: 50 });

    outage.report(serverError('57P03', 'the database system is starting up'));
    expect(lines.at(-1)!.message).toMatch(/^PostgreSQL unavailable since /);
    expect(lines).toHaveLength(3);
    outage.close();
  });

  it('runs a task at once when no outage is open, and defers it again when it fails for an outage', async () => {
    vi.useFakeTimers();
    const { logger, lines } = recordingLogger();
    let up = true;
    const outage = createDatabaseOutage({ logger, probe: () => Promise.resolve({ ok: up }), probeIntervalMs: 1_000 });
    let attempts = 0;
    outage.whenBack(() => {
      attempts += 1;
      if (attempts > 1) return Promise.resolve();
      up = false;
      return Promise.reject(serverError('57P01', 'terminating connection due to administrator command'));
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(attempts).toBe(1);
    expect(outage.isDown()).toBe(true);
    up = true;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(attempts).toBe(2);
    expect(lines.filter((l) => l.level === 'error')).toEqual([]);
    outage.close();
  });
});
