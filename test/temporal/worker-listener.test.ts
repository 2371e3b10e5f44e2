import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

const logger = createLogger('warn');
const CHANNELS = ['herald_webhook_wake', 'herald_send_wake', 'herald_inbound_wake', 'herald_events'];

interface Session {
  pid: number;
  query: string;
}

describe('a worker process', () => {
  let stack: TestStack;
  let worker: RunningWorker;

  /** The sessions on the stack's database (each test stack has its own) whose last statement was a LISTEN. */
  const listeners = () =>
    stack.orm.em
      .getConnection()
      .execute<Session[]>(
        `select pid, query from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and query ilike 'listen %'`,
      );

  beforeAll(async () => {
    installTemporalLogging(logger);
    stack = await createTestStack();
    worker = await startWorker(stack.config, logger);
  }, 120_000);

  afterAll(async () => {
    await worker?.shutdown();
    await stack?.close();
  });

  it('holds exactly one LISTEN connection, on every channel Herald notifies', async () => {
    const [listener] = await waitFor(
      'the worker to listen',
      async () => {
        const rows = await listeners();
        return rows.length > 0 ? rows : undefined;
      },
      30_000,
      50,
    );
    // Past the start: every loop and drain has subscribed by now.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const rows = await listeners();
    expect(rows, JSON.stringify(rows)).toHaveLength(1);
    expect(rows[0]!.pid).toBe(listener!.pid);
    for (const channel of CHANNELS) expect(rows[0]!.query).toContain(`LISTEN ${channel};`);
  });
});
