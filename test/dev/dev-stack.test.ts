import { exec, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Connection, Client } from '@temporalio/client';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../src/dev/paths.ts';
import { createServer } from 'node:net';
import { isListening } from '../../src/dev/ports.ts';
import { dropDatabase, withDatabase } from '../../src/dev/postgres.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { sharedServices, testDatabaseName } from '../support/stack.ts';
import { dashboardClient } from '../support/dashboard-client.ts';

const sh = promisify(exec);

interface DevRun {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/**
 * A free port below the kernel's ephemeral range (32768+), distinct from `taken`. The test
 * restarts the stack on the same ports; a port from `freePort()` (bind 0) can meanwhile be handed
 * to another test file's listener or to an outgoing connection, which made the second start fail
 * with "address already in use". Ports outside the ephemeral range are handed out by nobody.
 */
async function stablePort(taken: number[]): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (taken.includes(port)) continue;
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

/** `npm start`'s command, as a user runs it, with its data and ports kept away from real dev. */
function startDev(env: NodeJS.ProcessEnv): DevRun {
  let output = '';
  const child = spawn(process.execPath, [join(REPO_ROOT, 'src/cli/herald.mjs'), 'dev'], {
    env,
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

describe('herald dev (npm start)', () => {
  const services = sharedServices();
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-dev-'));
  const database = testDatabaseName(services.testRunId, 'dev');
  let run: DevRun | undefined;

  afterAll(async () => {
    if (run && run.child.exitCode === null) {
      run.child.kill('SIGINT');
      await run.exited;
    }
    await dropDatabase(services.pgServerUrl, database);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts the whole stack, prints a working curl, stops cleanly on Ctrl-C, and reuses its data', async () => {
    const picked: number[] = [];
    for (let i = 0; i < 6; i += 1) picked.push(await stablePort(picked));
    const [api, smtp, temporal, ui, sinkSmtp, sinkHttp] = picked as [number, number, number, number, number, number];
    const ports = { api, smtp, temporal, ui, sinkSmtp, sinkHttp };
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      NODE_ENV: 'development',
      HERALD_DATA_DIR: dataDir,
      DATABASE_URL: withDatabase(services.pgServerUrl, database),
      REDIS_URL: services.redisUrl,
      TEMPORAL_BIN: services.temporalBin,
      PORT: String(ports.api),
      SMTP_PORT: String(ports.smtp),
      TEMPORAL_PORT: String(ports.temporal),
      TEMPORAL_UI_PORT: String(ports.ui),
      SMTP_RELAY_URL: `smtp://127.0.0.1:${ports.sinkSmtp}`,
      MAIL_SINK_HTTP_PORT: String(ports.sinkHttp),
    };
    delete env.TEMPORAL_ADDRESS;

    run = startDev(env);
    const first = run;
    await waitFor('the banner', () => Promise.resolve(first.output().includes('Herald is running') ? true : undefined), 150_000, 500).catch(
      (error: Error) => {
        throw new Error(`${error.message}\n--- output ---\n${first.output()}`);
      },
    );
    const banner = first.output();
    const curl = /^\s+(curl -s -H "Authorization: Bearer (hrld_test_\w+)" \S+\/api\/v1\/me)$/m.exec(banner);
    expect(curl, banner).not.toBeNull();
    const [, command, key] = curl!;
    expect(banner).toContain(`Temporal UI   http://127.0.0.1:${ports.ui}`);
    expect(banner).toContain(`Inbound SMTP  127.0.0.1:${ports.smtp}`);
    expect(banner).toContain(`Mail sink     http://127.0.0.1:${ports.sinkHttp} (outbound relay smtp://127.0.0.1:${ports.sinkSmtp};`);
    expect(banner).toContain('Relay TLS     opportunistic (default for a relay on loopback)');
    const sinkPage = await fetch(`http://127.0.0.1:${ports.sinkHttp}/`);
    expect(sinkPage.status).toBe(200);
    expect(await sinkPage.text()).toContain('Herald mail sink');

    // The dashboard link signs in once as the dev workspace's owner.
    const link = /^\s+Dashboard\s+(http:\/\/\S+\/dashboard\/sign-in\/\S+)$/m.exec(banner)?.[1];
    expect(link, banner).toBeDefined();
    const dashboard = dashboardClient(new URL(link!).origin);
    const continued = await dashboard.submit(new URL(link!).pathname, new URL(link!).pathname, {});
    expect(continued.status, continued.text.slice(0, 300)).toBe(303);
    expect((await dashboard.get('/dashboard/keys')).text).toContain('dev key (all scopes)');
    expect((await dashboardClient(new URL(link!).origin).get(new URL(link!).pathname)).status).toBe(404);

    const me = JSON.parse((await sh(command!)).stdout) as { ok: boolean; data: { org_slug: string; scopes: string[] } };
    expect(me.ok).toBe(true);
    expect(me.data.org_slug).toBe('dev');
    expect(me.data.scopes).toContain('outbox.transactional:send');

    expect((await fetch(`http://127.0.0.1:${ports.ui}/`)).status).toBe(200);
    const connection = await Connection.connect({ address: `127.0.0.1:${ports.temporal}` });
    const client = new Client({ connection, namespace: 'default' });
    const runs = await waitFor(
      'the cleanup workflow filtered by HeraldOrgId',
      async () => {
        const found = [];
        for await (const wf of client.workflow.list({ query: `HeraldOrgId = 'platform' AND WorkflowType = 'cleanupIdempotencyRecords'` }))
          found.push(wf);
        return found.length > 0 ? found : undefined;
      },
      60_000,
    );
    expect(runs[0]!.taskQueue).toBe('herald-main');
    await connection.close();

    first.child.kill('SIGINT');
    expect(await first.exited).toBe(0);
    for (const port of Object.values(ports)) expect(await isListening('127.0.0.1', port)).toBe(false);

    run = startDev(env);
    const second = run;
    await waitFor(
      'the second banner',
      () => Promise.resolve(second.output().includes('Herald is running') ? true : undefined),
      150_000,
      500,
    ).catch((error: unknown) => {
      // What the second start was doing when it gave up, for the log of a slow or stuck start.
      throw new Error(`${error instanceof Error ? error.message : String(error)}; its last output:\n${second.output().slice(-3_000)}`);
    });
    expect(second.output()).toContain(key);
    expect(second.output()).not.toContain('applied migrations');
    second.child.kill('SIGINT');
    expect(await second.exited).toBe(0);
  }, 400_000);
});
