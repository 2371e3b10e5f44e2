import { MAIN_ENTRY, nodeFlagsFor } from '../../src/dev/paths.ts';
import { spawnService, waitFor, type Service } from '../../src/dev/processes.ts';
import type { TestStack } from './stack.ts';

/** `herald worker` as a real process on a test stack; resolves once it polls its task queues. */
export function spawnWorkerProcess(stack: Pick<TestStack, 'env'>): Promise<Service> {
  let polling = false;
  const service = spawnService({
    name: 'worker',
    command: process.execPath,
    args: [...nodeFlagsFor('worker', { ...process.env, ...stack.env }), MAIN_ENTRY, 'worker'],
    env: { ...process.env, ...stack.env, LOG_LEVEL: 'info' },
    onLine: (line) => {
      if (line.includes('"msg":"worker polling"')) polling = true;
    },
  });
  return waitFor('the worker process to poll', () => Promise.resolve(polling ? service : undefined), 90_000);
}
