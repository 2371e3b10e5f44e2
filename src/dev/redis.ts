import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { spawnService, waitFor, type Service } from './processes.ts';
import { isListening } from './ports.ts';

const LOCAL_REDIS = 'redis://127.0.0.1:6379';
const SPAWNED_PORT = 6390;

export async function pingRedis(url: string): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 2000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

async function commandExists(command: string, path: string): Promise<string | undefined> {
  const { existsSync } = await import('node:fs');
  return path
    .split(':')
    .filter(Boolean)
    .map((dir) => join(dir, command))
    .find((candidate) => existsSync(candidate));
}

/**
 * The Redis to use: REDIS_URL's when set (it must answer), else 127.0.0.1:6379, else a
 * `redis-server` from PATH started on port 6390 with its files under `dataDir`.
 */
export async function resolveRedis(options: {
  redisUrl?: string | undefined;
  dataDir: string;
  path: string;
  log: (line: string) => void;
}): Promise<{ url: string; service?: Service }> {
  if (options.redisUrl) {
    if (!(await pingRedis(options.redisUrl))) throw new Error('REDIS_URL is set but no Redis answers there');
    return { url: options.redisUrl };
  }
  if (await pingRedis(LOCAL_REDIS)) return { url: LOCAL_REDIS };
  const spawnedUrl = `redis://127.0.0.1:${SPAWNED_PORT}`;
  if (await isListening('127.0.0.1', SPAWNED_PORT)) {
    if (await pingRedis(spawnedUrl)) return { url: spawnedUrl };
  }
  const binary = await commandExists('redis-server', options.path);
  if (!binary) {
    throw new Error(
      'no Redis answers on 127.0.0.1:6379 and redis-server is not installed: ' +
        'install it (apt-get install redis-server) or set REDIS_URL',
    );
  }
  const dir = join(options.dataDir, 'redis');
  mkdirSync(dir, { recursive: true });
  options.log(`no Redis on 127.0.0.1:6379: starting redis-server on port ${SPAWNED_PORT}`);
  const service = spawnService({
    name: 'redis',
    command: binary,
    args: ['--port', String(SPAWNED_PORT), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'],
    onLine: () => {},
  });
  await waitFor('redis-server', async () => ((await pingRedis(spawnedUrl)) ? true : undefined), 15_000);
  return { url: spawnedUrl, service };
}
