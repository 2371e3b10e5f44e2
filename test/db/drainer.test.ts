import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Domain } from '../../db/entities/index.ts';
import { ALL_TENANTS } from '../../db/orm.ts';
import { deliveriesTotal } from '../../src/metrics/metrics.ts';
import { createDomainQueue } from '../../src/modules/outbound/domain-queue.repo.ts';
import { createDrainer, ownerGoneSummary, type DrainPlan, type DrainRun } from '../../src/queue/drainer.ts';
import type { QueueWakes } from '../../src/queue/wakes.ts';
import { createOrg } from '../support/factories.ts';
import { addSendingDomain } from '../support/sending.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

let stack: TestStack;
let orgId: string;

beforeAll(async () => {
  stack = await createTestStack();
  orgId = (await createOrg(stack.orm)).org.id;
});
afterAll(() => stack?.close());

/** No wake-ups: the drains here linger for nothing (lingerMs 0). */
const noWakes: QueueWakes = { subscribe: () => () => {}, subscribeChannel: () => () => {}, stop: () => Promise.resolve() };
const context = () => ({ heartbeat: () => {}, signal: new AbortController().signal });

interface FakeItem {
  id: string;
  dueMs: number;
}

/**
 * The frame of every queue drain (src/queue/drainer.ts) over a sending domain's real drain lease,
 * with a fake claim and work: it holds the lease while the work runs, releases it before it reads
 * the queue, and reports what the work counted.
 */
describe('createDrainer', () => {
  const queue = () => createDomainQueue(stack.orm);
  const leaseOf = async (domainId: string) =>
    (await stack.orm.em.fork().findOneOrFail(Domain, { id: domainId }, { ...ALL_TENANTS, refresh: true })).drainLeaseUntil;
  const sentCount = async () =>
    (await deliveriesTotal.get()).values.find((v) => v.labels.pipeline === 'sends' && v.labels.outcome === 'sent')?.value ?? 0;

  /** A plan over the domain's lease whose claim hands out `items` once and whose work runs `work`. */
  function planOver(
    domainId: string,
    items: FakeItem[],
    work: (item: FakeItem, run: DrainRun) => Promise<void>,
    run: DrainRun,
  ): DrainPlan<FakeItem> & { stateReadWithLease: Date | null | undefined } {
    let left = [...items];
    const plan: DrainPlan<FakeItem> & { stateReadWithLease: Date | null | undefined } = {
      stateReadWithLease: undefined,
      ownerId: domainId,
      concurrency: 4,
      lease: (seconds) => queue().leaseDomain(orgId, domainId, seconds),
      release: () => queue().releaseDomain(orgId, domainId),
      ownerGone: () => Promise.resolve(ownerGoneSummary('domain deleted')),
      claim(limit) {
        const claimed = left.slice(0, limit);
        left = left.slice(limit);
        return Promise.resolve({ claimed: claimed.length, items: claimed });
      },
      work: (item) => work(item, run),
      nextDue: () => Promise.resolve(null),
      async state() {
        plan.stateReadWithLease = await leaseOf(domainId);
        return { next_due_ms: 1_800_000_000_000.4, open: 1 };
      },
    };
    return plan;
  }

  it('holds the lease while it works, releases it, then reports the tally and the queue', async () => {
    const domain = await addSendingDomain(stack.orm, orgId);
    const leasesSeen: (Date | null | undefined)[] = [];
    let plan: ReturnType<typeof planOver> | undefined;
    const drainer = createDrainer<string, FakeItem>({
      pipeline: 'sends',
      wakes: noWakes,
      wakeChannel: 'herald_send_wake',
      lingerMs: 0,
      plan: (domainId, run) =>
        (plan = planOver(
          domainId,
          [
            { id: 'a', dueMs: Date.now() },
            { id: 'b', dueMs: Date.now() },
          ],
          async (item, r) => {
            leasesSeen.push(await leaseOf(domainId));
            r.tally.delivered += 1;
            r.tally.lastOutcome = 'sent';
            r.count('sent', item.dueMs);
          },
          run,
        )),
    });
    const sentBefore = await sentCount();

    const summary = await drainer.drain(domain.id, context());

    expect(leasesSeen).toHaveLength(2);
    for (const lease of leasesSeen) expect(lease!.getTime()).toBeGreaterThan(Date.now());
    expect(await leaseOf(domain.id)).toBeNull();
    expect(plan!.stateReadWithLease).toBeNull();
    expect(summary).toEqual({
      nextDueAt: 1_800_000_000_000,
      open: 1,
      delivered: 2,
      failed: 0,
      exhausted: 0,
      state: 'retrying',
      lastOutcome: 'sent',
    });
    expect((await sentCount()) - sentBefore).toBe(2);
  });

  it('reports an owner that is gone without claiming anything', async () => {
    let claims = 0;
    const drainer = createDrainer<string, FakeItem>({
      pipeline: 'sends',
      wakes: noWakes,
      wakeChannel: 'herald_send_wake',
      lingerMs: 0,
      plan: (domainId, run) => ({
        ...planOver(domainId, [], () => Promise.resolve(), run),
        claim: () => Promise.resolve({ claimed: ++claims, items: [] }),
      }),
    });

    const summary = await drainer.drain('no-such-domain', context());

    expect(summary).toEqual({
      nextDueAt: null,
      open: 0,
      delivered: 0,
      failed: 0,
      exhausted: 0,
      state: 'idle',
      lastOutcome: 'domain deleted',
    });
    expect(claims).toBe(0);
  });

  it('leaves the lease to lapse when the work fails, and rethrows', async () => {
    const domain = await addSendingDomain(stack.orm, orgId);
    const drainer = createDrainer<string, FakeItem>({
      pipeline: 'sends',
      wakes: noWakes,
      wakeChannel: 'herald_send_wake',
      lingerMs: 0,
      plan: (domainId, run) => planOver(domainId, [{ id: 'a', dueMs: Date.now() }], () => Promise.reject(new Error('database gone')), run),
    });

    await expect(drainer.drain(domain.id, context())).rejects.toThrow('database gone');

    expect((await leaseOf(domain.id))!.getTime()).toBeGreaterThan(Date.now());
  });
});
