import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKey } from '../../db/entities/index.ts';
import { createAuthenticator } from '../../src/modules/auth/authenticator.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

/**
 * The key lookup cache (src/modules/auth/authenticator.ts) on a clock of the test's own: one
 * lookup per key however many requests miss the cache together, a key in use read again in the
 * background before its entry expires, and never an entry served past its lifetime (a
 * revocation is honoured within it).
 */
describe('authenticator key cache', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await createTestStack();
  });
  afterAll(() => stack?.close());

  /** An authenticator on `clock` over the stack's ORM, counting its reads of api_keys. */
  function counted(clock: { ms: number }) {
    const counter = { keyReads: 0 };
    const orm = {
      em: {
        fork: () => {
          const em = stack.orm.em.fork();
          const findOne = em.findOne.bind(em);
          em.findOne = ((entity: unknown, ...rest: unknown[]) => {
            if (entity === ApiKey) counter.keyReads += 1;
            return (findOne as (...args: unknown[]) => unknown)(entity, ...rest);
          }) as typeof em.findOne;
          return em;
        },
      },
    } as unknown as MikroORM;
    return { authenticator: createAuthenticator({ orm, cacheTtlMs: 5_000, now: () => clock.ms }), counter };
  }

  const revoke = (id: string) => stack.orm.em.fork().nativeUpdate(ApiKey, { id }, { revokedAt: new Date() }, { filters: false });

  /** Lets the background lookup finish: asks again until the answer changes, a bounded number of times. */
  async function untilRefused(check: () => Promise<unknown>): Promise<unknown> {
    let answer = await check();
    for (let i = 0; i < 200 && answer !== null; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      answer = await check();
    }
    return answer;
  }

  it('reads a key once for the requests that miss the cache together', async () => {
    const { key, apiKey } = await createOrgWithKey(stack.orm);
    const { authenticator, counter } = counted({ ms: 1_000_000 });
    const contexts = await Promise.all(Array.from({ length: 20 }, () => authenticator.authenticate(key)));
    expect(contexts.every((context) => context?.keyId === apiKey.id)).toBe(true);
    expect(counter.keyReads).toBe(1);
  });

  it('reads a key in use again in the background before its entry expires', async () => {
    const { key, apiKey } = await createOrgWithKey(stack.orm);
    const clock = { ms: 1_000_000 };
    const { authenticator, counter } = counted(clock);
    expect((await authenticator.authenticate(key))?.keyId).toBe(apiKey.id);
    await revoke(apiKey.id);
    clock.ms += 3_900;
    // Young entry: used as it is, not read again.
    expect((await authenticator.authenticate(key))?.keyId).toBe(apiKey.id);
    expect(counter.keyReads).toBe(1);
    clock.ms += 200;
    // 4.1 s old: still answered from the entry (no wait), while the key is read again.
    expect((await authenticator.authenticate(key))?.keyId).toBe(apiKey.id);
    expect(await untilRefused(() => authenticator.authenticate(key))).toBeNull();
    expect(counter.keyReads).toBe(2);
  });

  it('never answers from an entry as old as the cache lifetime', async () => {
    const { key, apiKey } = await createOrgWithKey(stack.orm);
    const clock = { ms: 1_000_000 };
    const { authenticator, counter } = counted(clock);
    expect((await authenticator.authenticate(key))?.keyId).toBe(apiKey.id);
    await revoke(apiKey.id);
    clock.ms += 5_000;
    expect(await authenticator.authenticate(key)).toBeNull();
    expect(counter.keyReads).toBe(2);
  });
});
