import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executePrepared, namedQueryOf, preparedCall, type NativePool } from '../../db/prepared.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

/**
 * Prepared statements through MikroORM's transactions: prepared once per connection (the
 * statement shows in pg_prepared_statements and survives a rollback), values of every kind
 * arrive intact, and outside a transaction the same statement runs as a plain one.
 */
describe('executePrepared', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await createTestStack();
  });
  afterAll(() => stack?.close());

  const ECHO = {
    sql: `select :text::text as text, :count::int + 1 as next, :flag::boolean as flag, :at::timestamptz as at,
                 :list::text[] as list, :nothing::text as nothing, :text::text = :again::text as same`,
  };
  const tricky = `it's a "quote" \\ back\\slash, {braces}, ünïcødé 📨 and a ? and :name`;
  const values = {
    text: tricky,
    count: 41,
    flag: false,
    at: new Date('2026-11-25T01:02:03.456Z'),
    list: [tricky, '', 'a,b', 'NULL', null],
    nothing: null,
    again: tricky,
  };

  it('prepares on the transaction connection once and reuses it, also after a rollback', async () => {
    const run = () =>
      stack.orm.em.fork().transactional(async (tx) => {
        const [row] = await executePrepared<Record<string, unknown>>(tx, { ...ECHO, params: values });
        const [statements] = await tx.execute<{ names: string[] }[]>(
          `select array_agg(name order by name) as names from pg_prepared_statements where name like 'herald_%'`,
        );
        const [backend] = await tx.execute<{ pid: number }[]>('select pg_backend_pid() as pid');
        return { row, names: statements?.names ?? [], pid: backend!.pid };
      });
    const first = await run();
    const { at, ...rest } = first.row as { at: string };
    expect(new Date(at)).toEqual(values.at);
    expect(rest).toEqual({ text: tricky, next: 42, flag: false, list: [tricky, '', 'a,b', 'NULL', null], nothing: null, same: true });
    expect(first.names).toHaveLength(1);

    await expect(
      stack.orm.em.fork().transactional(async (tx) => {
        await executePrepared(tx, { ...ECHO, params: values });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');

    // Every pooled connection prepares it at most once: never two statements of one shape.
    for (let i = 0; i < 5; i += 1) {
      const again = await run();
      expect(again.row).toEqual(first.row);
      expect(again.names).toEqual(first.names);
    }
  });

  it('runs the same statement directly outside a transaction', async () => {
    const [row] = await executePrepared<Record<string, unknown>>(stack.orm.em.fork(), {
      ...ECHO,
      params: { ...values, count: 1, list: [] },
    });
    expect(row).toMatchObject({ text: tricky, next: 2, list: [], same: true });
  });

  it('names a statement apart from its protocol-level form (queryPrepared), so one connection can hold both', async () => {
    const statement = { sql: 'select :n::int + 1 as next', params: { n: 1 } };
    const pool = await (stack.orm.em.getConnection() as unknown as NativePool).getNativeClient();
    const client = await pool.connect();
    try {
      const call = preparedCall(statement);
      await client.query(`prepare ${call.name} as ${call.positional}`);
      const { rows } = await client.query<{ next: number }>(namedQueryOf(statement));
      expect(rows).toEqual([{ next: 2 }]);
    } finally {
      await client.query('deallocate all');
      client.release();
    }
  });

  it('refuses a parameter without a value and a value it cannot bind', async () => {
    const em = stack.orm.em.fork();
    await expect(executePrepared(em, { sql: 'select :missing::text', params: {} })).rejects.toThrow(':missing has no value');
    await expect(executePrepared(em, { sql: 'select :n::int', params: { n: Number.NaN } })).rejects.toThrow('not a finite number');
    await expect(executePrepared(em, { sql: 'select :o::jsonb', params: { o: { a: 1 } } })).rejects.toThrow('unsupported type');
  });
});
