import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../src/dev/ports.ts';

const run = promisify(execFile);

/**
 * A PostgreSQL cluster of a test's own (initdb into a temporary directory, its own port), for
 * tests that stop and start the server: the run's shared server on 127.0.0.1:5432 serves every
 * other test file at the same time and must never blink. As root, the server runs as the
 * `postgres` OS user (PostgreSQL refuses to run as root), through runuser.
 */
export interface PrivatePostgres {
  /** Server URL without a database path (trust authentication as `postgres`). */
  serverUrl: string;
  port: number;
  start(): Promise<void>;
  /** `fast` ends sessions and checkpoints; `immediate` drops everything (crash recovery at the next start). */
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  /** Stops the server if it runs and deletes the cluster. */
  destroy(): Promise<void>;
}

/** The binaries of the newest PostgreSQL installed under /usr/lib/postgresql (Debian's layout), or PG_BIN_DIR. */
function binDir(): string {
  const explicit = process.env.PG_BIN_DIR;
  if (explicit) return explicit;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) throw new Error('no PostgreSQL binaries under /usr/lib/postgresql (set PG_BIN_DIR)');
  return join(root, newest, 'bin');
}

async function postgresUid(): Promise<{ uid: number; gid: number }> {
  const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = binDir();
  const isRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'herald-pg-'));
  if (isRoot) {
    const { uid, gid } = await postgresUid();
    chownSync(dir, uid, gid);
  }
  const dataDir = join(dir, 'data');
  const exec = (tool: string, args: string[]) =>
    isRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]) : run(join(bin, tool), args);
  await exec('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-sync']);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50`;
  let running = false;
  const server: PrivatePostgres = {
    serverUrl: `postgres://postgres@127.0.0.1:${port}`,
    port,
    async start() {
      await exec('pg_ctl', ['-D', dataDir, '-l', join(dir, 'server.log'), '-o', options, '-w', '-t', '60', 'start']);
      running = true;
    },
    async stop(mode) {
      await exec('pg_ctl', ['-D', dataDir, '-m', mode, '-w', '-t', '60', 'stop']);
      running = false;
    },
    async destroy() {
      if (running) await server.stop('immediate').catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await server.start();
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return server;
}
