import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createConnection, type Socket } from 'node:net';
import { spawnService, waitFor, type Service } from './processes.ts';
import { isListening } from './ports.ts';

const LOCAL_REDIS = 'redis://127.0.0.1:6379';
const SPAWNED_PORT = 6390;

/** A RESP command (an array of bulk strings). */
const resp = (args: string[]) => `*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join('')}`;

/**
 * Whether a Redis answers PING at `url` (AUTH first with the URL's credentials; rediss: over
 * TLS), within 2 s. Spoken over a bare socket rather than through ioredis: the dev supervisor
 * calls this and nothing else of Redis, and ioredis would keep ~15 MB of it resident.
 */
export async function pingRedis(url: string): Promise<boolean> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  const host = parsed.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
  const port = Number(parsed.port || 6379);
  const password = decodeURIComponent(parsed.password);
  const user = decodeURIComponent(parsed.username);
  const commands = [...(password ? [resp(user ? ['AUTH', user, password] : ['AUTH', password])] : []), resp(['PING'])];
  const socket: Socket =
    parsed.protocol === 'rediss:' ? (await import('node:tls')).connect({ host, port, servername: host }) : createConnection({ host, port });
  return new Promise<boolean>((resolve) => {
    let answer = '';
    const done = (result: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => done(false), 2000);
    socket.once('error', () => done(false));
    socket.once('close', () => done(false));
    socket.once(parsed.protocol === 'rediss:' ? 'secureConnect' : 'connect', () => socket.write(commands.join('')));
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('latin1');
      const lines = answer.split('\r\n');
      // One reply line per command sent. PING's decides: +PONG, or -NOAUTH when AUTH failed (an AUTH
      // refused by a server without a password, as ioredis tolerates, still gets +PONG).
      if (lines.length <= commands.length) return;
      done(lines[commands.length - 1] === '+PONG');
    });
  });
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
