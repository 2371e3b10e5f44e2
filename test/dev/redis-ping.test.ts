import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, isListening } from '../../src/dev/ports.ts';
import { spawnService, waitFor, type Service } from '../../src/dev/processes.ts';
import { pingRedis } from '../../src/dev/redis.ts';

/** The dev supervisor's Redis probe (a RESP ping over a bare socket), against real redis-servers. */
describe('pingRedis', () => {
  const servers: Service[] = [];
  let open = 0;
  let guarded = 0;

  const startRedis = async (extra: string[]): Promise<number> => {
    const port = await freePort();
    const service = spawnService({
      name: 'redis',
      command: 'redis-server',
      args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extra],
      onLine: () => {},
    });
    servers.push(service);
    await waitFor('redis-server', async () => ((await isListening('127.0.0.1', port)) ? true : undefined), 15_000);
    return port;
  };

  beforeAll(async () => {
    open = await startRedis([]);
    guarded = await startRedis(['--requirepass', 'sesame']);
  }, 30_000);
  afterAll(async () => {
    for (const server of servers) await server.stop();
  });

  it('answers true for a Redis that answers PING, with or without a logical database in the URL', async () => {
    expect(await pingRedis(`redis://127.0.0.1:${open}`)).toBe(true);
    expect(await pingRedis(`redis://127.0.0.1:${open}/3`)).toBe(true);
  });

  it('authenticates with the URL password, and is false without it or with a wrong one', async () => {
    expect(await pingRedis(`redis://:sesame@127.0.0.1:${guarded}`)).toBe(true);
    expect(await pingRedis(`redis://default:sesame@127.0.0.1:${guarded}`)).toBe(true);
    expect(await pingRedis(`redis://127.0.0.1:${guarded}`)).toBe(false);
    expect(await pingRedis(`redis://:wrong@127.0.0.1:${guarded}`)).toBe(false);
  });

  it('is false where nothing listens and for a URL that does not parse', async () => {
    expect(await pingRedis(`redis://127.0.0.1:${await freePort()}`)).toBe(false);
    expect(await pingRedis('not a url')).toBe(false);
  });
});
