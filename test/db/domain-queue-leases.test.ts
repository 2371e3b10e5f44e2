import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Domain, TransactionalEmail } from '../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { utcDay } from '../../src/modules/sends/sends.fns.ts';
import { createDomainQueue } from '../../src/modules/outbound/domain-queue.repo.ts';
import { createOrg } from '../support/factories.ts';
import { addSendingDomain, insertScheduledEmail } from '../support/sending.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

let stack: TestStack;
let orgId: string;

beforeAll(async () => {
  stack = await createTestStack();
  orgId = (await createOrg(stack.orm)).org.id;
});
afterAll(() => stack?.close());

/**
 * Lease extension beside the sent recorder: a row being settled (locked by the recorder's
 * group commit) is skipped, not waited for, so the two cannot deadlock; the other rows of the
 * call are extended.
 */
describe('send leases', () => {
  const dueOf = async (id: string) =>
    (await scopeToOrg(stack.orm.em, orgId).findOneOrFail(TransactionalEmail, { id }, { refresh: true })).nextAttemptAt?.getTime();

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

/**
 * The send reconciler's look: a domain whose due emails have no drain running is stranded,
 * except where only broadcast messages are due and the domain may not take them now (paused,
 * or its warm-up cap for the day used up): its actor sleeps until then on purpose.
 */
describe('stranded sending domains', () => {
  /** A queued email on `domainId`, due a minute ago; a broadcast's message when `broadcast`. */
  async function dueEmail(domainId: string, broadcast: boolean): Promise<void> {
    const id = await insertScheduledEmail(stack.orm, orgId);
    await stack.orm.em
      .fork()
      .getConnection()
      .execute(
        `update transactional_emails set domain_id = ?, status = 'queued', scheduled_at = null, next_attempt_at = now() - interval '1 minute',
              broadcast_id = ?, contact_id = ? where id = ? and org_id = ?`,
        [domainId, broadcast ? 'b'.repeat(24) : null, broadcast ? id : null, id, orgId],
      );
  }
  const stranded = async () => (await createDomainQueue(stack.orm).findStranded(5_000, 1_000)).map((d) => d.id);

  it('leaves out a domain whose due broadcast messages wait for its warm-up cap or a pause, not one with transactional mail due', async () => {
    const capped = await addSendingDomain(stack.orm, orgId, { dailyCap: 10 });
    const paused = await addSendingDomain(stack.orm, orgId, { reputation: 'recovery' });
    const open = await addSendingDomain(stack.orm, orgId, { dailyCap: 10 });
    const cappedWithReceipt = await addSendingDomain(stack.orm, orgId, { dailyCap: 10 });
    for (const domain of [capped, paused, open, cappedWithReceipt]) await dueEmail(domain.id, true);
    await dueEmail(cappedWithReceipt.id, false);
    for (const domain of [capped, cappedWithReceipt]) {
      await stack.orm.em
        .fork()
        .getConnection()
        .execute(`insert into domain_daily_sends (domain_id, day, shard, org_id, count) values (?, ?, 0, ?, 10)`, [
          domain.id,
          utcDay(new Date()),
          orgId,
        ]);
    }
    const found = await stranded();
    expect(found).toContain(open.id);
    expect(found).toContain(cappedWithReceipt.id);
    expect(found).not.toContain(capped.id);
    expect(found).not.toContain(paused.id);

    // A cap raised, or a pause lifted, makes them stranded again.
    await stack.orm.em.fork().nativeUpdate(Domain, { id: capped.id }, { dailyCap: 11 }, ALL_TENANTS);
    await stack.orm.em.fork().nativeUpdate(Domain, { id: paused.id }, { reputationState: 'healthy' }, ALL_TENANTS);
    expect(await stranded()).toEqual(expect.arrayContaining([capped.id, paused.id]));
  });
});
