import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities/index.ts';
import { createOrm } from '../db/orm.ts';
import type { Config } from './config.ts';
import type { Logger } from './logger.ts';
import { connectTemporalClient } from './temporal/client.ts';
import { ensureSchedules } from './temporal/schedules.ts';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));
/** Where `herald bundle-workflows` writes the ahead-of-time bundle used in production. */
export const WORKFLOW_BUNDLE_PATH = fileURLToPath(
  new URL('../.build/workflow-bundle.js', import.meta.url),
);

/** Routes the Temporal core's warnings and errors into Herald's log. Once per process. */
export function installTemporalLogging(logger: Logger): void {
  const forward = (level: string, message: string, meta?: Record<string, unknown>) => {
    if (level === 'ERROR') logger.error(message, meta ?? {});
    else if (level === 'WARN') logger.warn(message, meta ?? {});
  };
  Runtime.install({
    logger: {
      log: (level, message, meta) => forward(level, message, meta),
      trace: () => {},
      debug: () => {},
      info: () => {},
      warn: (message, meta) => forward('WARN', message, meta),
      error: (message, meta) => forward('ERROR', message, meta),
    },
  });
}

export interface RunningWorker {
  /** Resolves when every task-queue worker has stopped. */
  done: Promise<void>;
  shutdown(): Promise<void>;
}

function workflowSource(): Pick<WorkerOptions, 'workflowsPath' | 'workflowBundle'> {
  return existsSync(WORKFLOW_BUNDLE_PATH)
    ? { workflowBundle: { codePath: WORKFLOW_BUNDLE_PATH } }
    : { workflowsPath: WORKFLOWS_PATH };
}

/**
 * The worker process: one Temporal worker per Herald task queue, sharing one connection, one
 * ORM and one activity set. Ensures Herald's schedules exist before polling.
 */
export async function startWorker(config: Config, logger: Logger): Promise<RunningWorker> {
  const orm = await createOrm({ databaseUrl: config.database.url, poolMax: config.database.poolMax });
  const connection = await NativeConnection.connect({ address: config.temporal.address });
  const temporal = await connectTemporalClient(config);
  const activities = createActivities({ orm });
  const source = workflowSource();
  const queues = Object.values(config.temporal.taskQueues);
  const workers = await Promise.all(
    queues.map((taskQueue) =>
      Worker.create({
        connection,
        namespace: config.temporal.namespace,
        taskQueue,
        activities,
        ...source,
        shutdownGraceTime: '10s',
      }),
    ),
  );
  const schedules = await ensureSchedules(temporal.client, config);
  if (schedules.created.length > 0) logger.info('schedules created', schedules);
  logger.info('worker polling', { taskQueues: queues, namespace: config.temporal.namespace });

  const done = Promise.all(workers.map((worker) => worker.run())).then(async () => {
    await temporal.close();
    await connection.close();
    await orm.close();
  });
  return {
    done,
    async shutdown() {
      for (const worker of workers) {
        if (worker.getState() === 'RUNNING') worker.shutdown();
      }
      await done;
    },
  };
}
