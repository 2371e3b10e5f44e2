import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inShortTransaction } from '../../db/short-transaction.ts';
import { refusalRow } from '../../src/modules/sends/quota.repo.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

/**
 * The two-round-trip transaction (BEGIN with the first statement, COMMIT with the second):
 * both statements commit together; a failing second statement, or an error thrown between
 * the two, leaves nothing behind and the connection usable; herald_refuse's detail comes back.
 */
describe('inShortTransaction', () => {
  let stack: TestStack;
  const table = `short_tx_${process.pid}`;

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.orm.em.getConnection().execute(`create table ${table} (id text primary key, n int not null)`);
  });
  afterAll(async () => {
    await stack?.orm.em.getConnection().execute(`drop table if exists ${table}`);
    await stack?.close();
  });

  const insert = (id: string, n: number) => ({
    sql: `insert into ${table} (id, n) values (:id, :n::int) returning id, n`,
    params: { id, n },
  });
  const ids = async () =>
    (await stack.orm.em.getConnection().execute<{ id: string }[]>(`select id from ${table} order by id`)).map((row) => row.id);

  it('commits the first and the second statement together and answers their rows', async () => {
    const rows = await inShortTransaction(stack.orm.em, async (tx) => {
      const first = await tx.begin<{ id: string; n: number }>(insert('a1', 1));
      const second = await tx.commitWith<{ id: string; n: number }>(insert('a2', first[0]!.n + 1));
      return [...first, ...second];
    });
    expect(rows).toEqual([
      { id: 'a1', n: 1 },
      { id: 'a2', n: 2 },
    ]);
    expect(await ids()).toEqual(['a1', 'a2']);
  });

  it('rolls the first statement back when the second fails, so its COMMIT never runs', async () => {
    await expect(
      inShortTransaction(stack.orm.em, async (tx) => {
        await tx.begin(insert('b1', 1));
        // The key exists: the statement fails before the COMMIT sent with it.
        return tx.commitWith(insert('a1', 2));
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect(await ids()).toEqual(['a1', 'a2']);
  });

  it('rolls back when the work throws between the two statements', async () => {
    await expect(
      inShortTransaction(stack.orm.em, async (tx) => {
        await tx.begin(insert('c1', 1));
        throw new Error('refused after the read');
      }),
    ).rejects.toThrow('refused after the read');
    expect(await ids()).toEqual(['a1', 'a2']);
  });

  it('refuses to leave a transaction open, rolling it back', async () => {
    await expect(inShortTransaction(stack.orm.em, (tx) => tx.begin(insert('d1', 1)))).rejects.toThrow(/left open/);
    expect(await ids()).toEqual(['a1', 'a2']);
  });

  it("gives herald_refuse's detail back, with nothing committed", async () => {
    const error = await inShortTransaction(stack.orm.em, async (tx) => {
      await tx.begin(insert('e1', 1));
      return tx.commitWith({
        sql: `select herald_refuse(json_build_object('from_balance', null, 'balance', :balance::int, 'day_count', 3, 'used', 7)::text)`,
        params: { balance: 5 },
      });
    }).catch((caught: unknown) => caught);
    expect(refusalRow(error)).toEqual({ from_balance: null, balance: 5, day_count: 3, used: 7, draining: false });
    expect(refusalRow(new Error('other'))).toBeNull();
    expect(await ids()).toEqual(['a1', 'a2']);
  });

  it('keeps every pooled connection usable after the failures (no transaction left open)', async () => {
    const rounds = Array.from({ length: 12 }, (_, i) =>
      inShortTransaction(stack.orm.em, async (tx) => {
        await tx.begin(insert(`f${String(i).padStart(2, '0')}`, i));
        return tx.commitWith<{ one: number }>({ sql: 'select 1 as one', params: {} });
      }),
    );
    for (const rows of await Promise.all(rounds)) expect(rows).toEqual([{ one: 1 }]);
    expect((await ids()).filter((id) => id.startsWith('f'))).toHaveLength(12);
    const [row] = await stack.orm.em
      .getConnection()
      .execute<{ count: string }[]>(
        `select count(*) from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`,
      );
    expect(Number(row!.count)).toBe(0);
  });
});
