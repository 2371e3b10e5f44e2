import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scopeToOrg } from '../../db/orm.ts';
import { claimDueRuns } from '../../src/modules/automations/automation-queue.repo.ts';
import { createPublishedAutomation, insertRun } from '../support/automation-rows.ts';
import { createOrg } from '../support/factories.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

let stack: TestStack;

beforeAll(async () => {
  stack = await createTestStack();
});
afterAll(() => stack?.close());

/** An active run of the automation due `dueInSeconds` from now (negative: overdue), in a wait when `waiting`. */
async function runDue(
  orgId: string,
  automation: { id: string; definitionId?: string | null | undefined },
  dueInSeconds: number,
  waiting: boolean,
) {
  const run = await insertRun(stack.orm, orgId, automation, { stepId: waiting ? 'pause' : 'start' });
  const until = new Date(Date.now() + dueInSeconds * 1000).toISOString();
  await stack.orm.em
    .fork()
    .execute(`update automation_runs set due_at = ?, context = ?::jsonb where id = ?`, [
      until,
      JSON.stringify(waiting ? { wait: { step: 'pause', until } } : {}),
      run.id,
    ]);
  return run.id;
}

/** The ids claimDueRuns locks (in its order), in a transaction rolled back afterwards. */
async function claim(orgId: string, automationId: string, limit: number): Promise<string[]> {
  const em = scopeToOrg(stack.orm.em.fork(), orgId);
  await em.begin();
  try {
    return (await claimDueRuns(em, orgId, automationId, limit)).map((run) => run.id);
  } finally {
    await em.rollback();
  }
}

describe('claimDueRuns', () => {
  it('claims runs whose wait has ended before runs still to be parked, each lane oldest due first, and nothing not due', async () => {
    const { org } = await createOrg(stack.orm);
    const automation = await createPublishedAutomation(stack.orm, org.id, { status: 'active' });
    const fresh = [await runDue(org.id, automation, -3600, false), await runDue(org.id, automation, -3500, false)];
    const waited = [await runDue(org.id, automation, -60, true), await runDue(org.id, automation, -30, true)];
    await runDue(org.id, automation, 600, true);
    await runDue(org.id, automation, 600, false);

    // The waits first although the fresh runs fell due earlier; the rest of the batch is the fresh runs.
    expect(await claim(org.id, automation.id, 3)).toEqual([...waited, fresh[0]]);
    expect(await claim(org.id, automation.id, 10)).toEqual([...waited, ...fresh]);
    expect(await claim(org.id, automation.id, 1)).toEqual([waited[0]]);
  });

  it('claims nothing of a paused automation, waits included', async () => {
    const { org } = await createOrg(stack.orm);
    const automation = await createPublishedAutomation(stack.orm, org.id, { status: 'paused' });
    await runDue(org.id, automation, -60, true);
    await runDue(org.id, automation, -60, false);
    expect(await claim(org.id, automation.id, 10)).toEqual([]);
  });
});
