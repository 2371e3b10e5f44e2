import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.ts';
import { errorHandler } from '../../src/http/middleware/error-handler.ts';
import type { HeraldState } from '../../src/http/state.ts';
import { createLogger } from '../../src/logger.ts';

/** A Koa app with Herald's error handler over loopback HTTP, logging into `lines`. */
describe('error handler logging', () => {
  const lines: { level: string; msg: string; [field: string]: unknown }[] = [];
  let server: Server;
  let base: string;

  beforeAll(async () => {
    const app = new Koa<HeraldState>();
    app.use(
      errorHandler(
        'http://127.0.0.1',
        createLogger('info', {}, (line) => lines.push(JSON.parse(line) as (typeof lines)[number])),
      ),
    );
    app.use((ctx) => {
      ctx.state.requestId = 'req_test';
      if (ctx.path === '/refused')
        throw new AppError('bad_gateway', 'The delivery provider rejected the message: 554 no.', { reason: 'PROVIDER_REJECTED' });
      if (ctx.path === '/invalid') throw new AppError('invalid_request', 'Bad field.');
      throw new Error('database on fire');
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    lines.length = 0;
  });

  it('logs a 5xx Herald chose to answer (a provider refusal) as a warning with its code, without a stack', async () => {
    const response = await fetch(`${base}/refused`);
    expect(response.status).toBe(502);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('bad_gateway');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'warn', status: 502, code: 'bad_gateway', requestId: 'req_test', path: '/refused' });
    expect(JSON.stringify(lines[0])).not.toMatch(/at .*error-handler\.test\.ts/);
  });

  it('logs an unexpected failure as an error with its cause, and answers 500 without it', async () => {
    const response = await fetch(`${base}/crash`);
    expect(response.status).toBe(500);
    expect(JSON.stringify(await response.json())).not.toMatch(/database on fire/);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'error', msg: 'request failed', requestId: 'req_test' });
    expect(JSON.stringify(lines[0])).toMatch(/database on fire/);
  });

  it('logs nothing for a 4xx', async () => {
    expect((await fetch(`${base}/invalid`)).status).toBe(400);
    expect(lines).toHaveLength(0);
  });
});
