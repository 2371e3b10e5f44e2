import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { freePort } from '../../src/dev/ports.ts';
import { startTemporalDevServer } from '../../src/dev/temporal-server.ts';
import { sharedServices } from '../support/stack.ts';

describe('the Temporal dev server launcher', () => {
  const services = sharedServices();
  const dir = mkdtempSync(join(tmpdir(), 'herald-temporal-launch-'));
  let squatter: Server | undefined;

  afterAll(() => {
    squatter?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('says why the server died while starting, with its own last lines, after retrying a port race', async () => {
    const port = await freePort();
    squatter = createServer();
    await new Promise<void>((resolve) => squatter!.listen(port, '127.0.0.1', resolve));
    const stderr = vi.spyOn(process.stderr, 'write');
    try {
      const started = startTemporalDevServer({
        binary: services.temporalBin,
        port,
        uiPort: null,
        namespace: 'default',
        dbFile: null,
        logFile: join(dir, 'server.log'),
        readyTimeoutMs: 60_000,
      });
      await expect(started).rejects.toThrow(/exited with code 1 while starting; its last output:\n[\s\S]*address already in use/);
      // The first try and two more: the taken port here is the frontend's, so every try loses.
      const retries = stderr.mock.calls.filter(([chunk]) => String(chunk).includes('starting it again'));
      expect(retries).toHaveLength(2);
    } finally {
      stderr.mockRestore();
    }
  }, 90_000);
});
