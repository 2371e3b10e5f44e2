import type { Service } from '../../src/dev/processes.ts';
import { spawnHeraldProcess } from './herald-process.ts';
import type { TestStack } from './stack.ts';

/** `herald worker` as a real process on a test stack; resolves once it polls its task queues. */
export async function spawnWorkerProcess(stack: Pick<TestStack, 'env'>): Promise<Service> {
  return (await spawnHeraldProcess(stack, 'worker')).service;
}
