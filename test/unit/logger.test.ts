import { describe, expect, it } from 'vitest';
import { createLogger, type LogLevel } from '../../src/logger.ts';

function capture(level: LogLevel, bindings: Record<string, unknown> = {}) {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger(level, bindings, (line) => {
    expect(line.endsWith('\n')).toBe(false);
    lines.push(JSON.parse(line) as Record<string, unknown>);
  });
  return { logger, lines };
}

describe('logger', () => {
  it('writes one JSON line per call with time, level, msg and the fields', () => {
    const { logger, lines } = capture('info', { component: 'api' });
    logger.info('request done', { requestId: 'req_1', status: 200 });
    expect(lines).toEqual([
      {
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        level: 'info',
        msg: 'request done',
        component: 'api',
        requestId: 'req_1',
        status: 200,
      },
    ]);
  });

  it('drops lines under its level and writes nothing when silent', () => {
    const { logger, lines } = capture('warn');
    logger.debug('d');
    logger.info('i');
    logger.warn('w');
    logger.error('e');
    expect(lines.map((l) => l.level)).toEqual(['warn', 'error']);
    const silent = capture('silent');
    silent.logger.error('nothing');
    expect(silent.lines).toEqual([]);
  });

  it('redacts fields and bindings named like secrets, in children too', () => {
    const { logger, lines } = capture('debug', { apiKey: 'hrld_live_secret' });
    logger
      .child({ signing_secret: 'whsec_x', endpoint: 'ep_1' })
      .info('sent', { authorization: 'Bearer hrld_live_x', password: 'p', private_key: 'k', token: 't', kept: 'v' });
    expect(lines[0]).toMatchObject({
      apiKey: '[redacted]',
      signing_secret: '[redacted]',
      authorization: '[redacted]',
      password: '[redacted]',
      private_key: '[redacted]',
      token: '[redacted]',
      endpoint: 'ep_1',
      kept: 'v',
    });
    expect(JSON.stringify(lines)).not.toMatch(/hrld_live|whsec_x/);
  });

  it('keeps an Error under any field name with its name, message and stack', () => {
    const { logger, lines } = capture('info');
    logger.error('failed', { cause: new TypeError('boom') });
    expect(lines[0]!.cause).toMatchObject({ name: 'TypeError', message: 'boom', stack: expect.stringContaining('TypeError: boom') });
  });
});
