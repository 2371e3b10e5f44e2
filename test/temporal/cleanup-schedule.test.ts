import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@temporalio/client';
import { IdempotencyRecord } from '../../db/entities/index.ts';
import { ALL_TENANTS } from '../../db/orm.ts';
import { createLogger } from '../../src/logger.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { cleanupScheduleId, ensureSchedules } from '../../src/temporal/schedules.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { spawnWorkerProcess } from '../support/worker-process.ts';
import { createOrg } from '../support/factories.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

const HOUR = 3_600_000;

describe('idempotency cleanup on a Temporal Schedule', () => {
  let stack: TestStack;
  let temporal: TemporalClientHandle;
  let client: Client;
  let orgId: string;
  let worker: RunningWorker | undefined;
  const logger = createLogger('warn');

  async function insertRecord(key: string, expiresAt: Date) {
    const em = stack.orm.em.fork();
    em.create(IdempotencyRecord, {
      orgId,
      apiKeyId: orgId,
      key,
      fingerprint: 'f'.repeat(64),
      state: 'completed',
      responseStatus: 200,
      responseBody: { ok: true },
      expiresAt,
    });
    await em.flush();
  }

  async function remainingKeys(): Promise<string[]> {
    const rows = await stack.orm.em.fork().find(IdempotencyRecord, {}, { ...ALL_TENANTS, orderBy: { key: 'asc' } });
    return rows.map((r) => r.key);
  }

  async function listCleanupRuns(status?: 'Running' | 'Completed') {
    const filters = [
      `HeraldOrgId = 'platform'`,
      `HeraldKind = 'maintenance'`,
      `WorkflowType = 'cleanupIdempotencyRecords'`,
      `TaskQueue = '${stack.config.temporal.taskQueue}'`,
      ...(status ? [`ExecutionStatus = '${status}'`] : []),
    ];
    const runs = [];
    for await (const run of client.workflow.list({ query: filters.join(' AND ') })) runs.push(run);
    return runs;
  }

  beforeAll(async () => {
    installTemporalLogging(logger);
    stack = await createTestStack();
    temporal = await connectTemporalClient(stack.config);
    client = temporal.client;
    orgId = (await createOrg(stack.orm)).org.id;
  });

  afterAll(async () => {
    await worker?.shutdown();
    await client.schedule
      .getHandle(cleanupScheduleId(stack.config))
      .delete()
      .catch(() => {});
    await temporal.close();
    await stack.close();
  });

  it('is created by the worker and deletes expired records through the real worker', async () => {
    await insertRecord('expired-1', new Date(Date.now() - HOUR));
    await insertRecord('fresh-1', new Date(Date.now() + 23 * HOUR));

    worker = await startWorker(stack.config, logger);
    await waitFor('expired-1 to be deleted', async () => ((await remainingKeys()).includes('expired-1') ? undefined : true), 60_000);
    expect(await remainingKeys()).toEqual(['fresh-1']);

    const schedule = await client.schedule.getHandle(cleanupScheduleId(stack.config)).describe();
    expect(schedule.action).toMatchObject({
      type: 'startWorkflow',
      workflowType: 'cleanupIdempotencyRecords',
      taskQueue: stack.config.temporal.taskQueue,
    });
    expect(schedule.spec.intervals).toMatchObject([{ every: HOUR }]);

    const completed = await waitFor(
      'the run to be visible by HeraldOrgId',
      async () => {
        const runs = await listCleanupRuns('Completed');
        return runs.length > 0 ? runs : undefined;
      },
      30_000,
    );
    expect(completed[0]!.typedSearchAttributes.getAll().map((pair) => [pair.key.name, pair.value])).toEqual(
      expect.arrayContaining([
        ['HeraldOrgId', 'platform'],
        ['HeraldKind', 'maintenance'],
      ]),
    );
  }, 180_000);

  it('does not create the schedule twice', async () => {
    expect(await ensureSchedules(client, stack.config)).toEqual({ created: [] });
  });

  it('loses nothing when the worker process is killed: a run started meanwhile completes after restart', async () => {
    await worker!.shutdown();
    worker = undefined;

    const doomed = await spawnWorkerProcess(stack);
    doomed.child.kill('SIGKILL');
    await doomed.exited;

    await insertRecord('expired-2', new Date(Date.now() - HOUR));
    await client.schedule.getHandle(cleanupScheduleId(stack.config)).trigger();
    await waitFor(
      'a triggered run waiting for a worker',
      async () => ((await listCleanupRuns('Running')).length > 0 ? true : undefined),
      30_000,
    );
    expect(await remainingKeys()).toContain('expired-2');

    const restarted = await spawnWorkerProcess(stack);
    try {
      await waitFor(
        'expired-2 to be deleted after restart',
        async () => ((await remainingKeys()).includes('expired-2') ? undefined : true),
        60_000,
      );
      await waitFor('no run left running', async () => ((await listCleanupRuns('Running')).length === 0 ? true : undefined), 60_000);
      expect(await remainingKeys()).toEqual(['fresh-1']);
    } finally {
      await restarted.stop();
    }
  }, 240_000);
});
