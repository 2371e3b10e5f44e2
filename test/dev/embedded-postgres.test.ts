import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/dev/ports.ts';
import { canConnect, startEmbeddedPostgres, withDatabase, type PostgresServer } from '../../src/dev/postgres.ts';

describe('embedded PostgreSQL (the fallback when none answers)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-embedded-'));
  let server: PostgresServer | undefined;
  afterAll(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('initialises a data directory, serves connections, and keeps its data across restarts', async () => {
    const port = await freePort();
    const start = () => startEmbeddedPostgres({ dataDir, persistent: true, port, log: () => {} });
    server = await start();
    expect(server.embedded).toBe(true);
    expect(await canConnect(withDatabase(server.serverUrl, 'postgres'))).toBe(true);
    expect(existsSync(join(dataDir, 'postgres', 'PG_VERSION'))).toBe(true);
    await server.stop();
    server = undefined;
    expect(await canConnect(withDatabase(`postgres://postgres:herald-dev@127.0.0.1:${port}`, 'postgres'))).toBe(false);

    server = await start();
    expect(await canConnect(withDatabase(server.serverUrl, 'postgres'))).toBe(true);
  }, 120_000);
});
