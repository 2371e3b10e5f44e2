import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TransactionalEmail } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { createDomainQueue } from '../../src/modules/sends/domain-queue.repo.ts';
import { createOrg } from '../support/factories.ts';
import { insertScheduledEmail } from '../support/sending.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

/**
 * Lease extension beside the sent recorder: a row being settled (locked by the recorder's
 * group commit) is skipped, not waited for, so the two cannot deadlock; the other rows of the
 * call are extended.
 */
describe('send leases', () => {
  let stack: TestStack;
  let orgId: string;

  beforeAll(async () => {
    stack = await createTestStack();
    orgId = (await createOrg(stack.orm)).org.id;
  });
  afterAll(() => stack?.close());

  const dueOf = async (id: string) => (await scopeToOrg(stack.orm.em, orgId).findOneOrFail(TransactionalEmail, { id }, { refresh: true })).nextAttemptAt?.getTime();

  it('extends free rows at once and skips a row another transaction holds', async () => {
    const [busy, free] = [await insertScheduledEmail(stack.orm, orgId), await insertScheduledEmail(stack.orm, orgId)];
    const [busyBefore, freeBefore] = [await dueOf(busy), await dueOf(free)];
    const queue = createDomainQueue(stack.orm);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holder = stack.orm.em.fork().transactional(async (tx) => {
      await tx.execute(`select id from transactional_emails where id = ? for update`, [busy]);
      locked();
      await released;
    });
    await isLocked;
    const outcome = await Promise.race([
      queue.extendLeases(orgId, [busy, free], 30).then(() => 'returned'),
      new Promise((resolve) => setTimeout(() => resolve('waited'), 3_000)),
    ]);
    release();
    await holder;
    expect(outcome).toBe('returned');
    expect(await dueOf(busy)).toBe(busyBefore);
    const freeAfter = await dueOf(free);
    expect(freeAfter).not.toBe(freeBefore);
    expect(Math.abs(freeAfter! - (Date.now() + 30_000))).toBeLessThan(10_000);
  });
});
