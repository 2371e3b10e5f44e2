import type { EntityManager } from '@mikro-orm/postgresql';
import type { PoolClient, QueryResult } from 'pg';
import { executeText, preparedCall, type NativePool } from './prepared.ts';
import type { SqlFragment } from './sql-fragment.ts';

/**
 * A transaction of two statements in two round trips, on a connection of the pool behind
 * MikroORM: BEGIN travels with the first statement and COMMIT with the second, in one
 * simple-protocol message each (PostgreSQL runs the statements of such a message in order and
 * stops at the first error). Both statements run prepared (db/prepared.ts: PREPARE once per
 * connection, then a cheap EXECUTE with literals). Made for a send's acceptance, whose
 * transaction is a read that takes its locks and a write: through MikroORM's `transactional`
 * it took four round trips (BEGIN, read, write, COMMIT).
 *
 * The second statement must fail, not answer, when its transaction must not commit: an error
 * stops the message before its COMMIT, and the transaction is rolled back here.
 */
export interface ShortTransaction {
  /** BEGIN and `first` in one round trip: `first`'s rows. */
  begin<T extends object>(first: SqlFragment): Promise<T[]>;
  /** `last` and COMMIT in one round trip: `last`'s rows once committed. */
  commitWith<T extends object>(last: SqlFragment): Promise<T[]>;
}

/** The statements prepared on each pooled pg client by this module (named apart from db/prepared.ts's, which key on Kysely's connection). */
const preparedOnClient = new WeakMap<PoolClient, Set<string>>();

/** The rows of the statement at `index` of a multi-statement message's results. */
function rowsAt<T extends object>(results: unknown, index: number): T[] {
  const list = (Array.isArray(results) ? results : [results]) as QueryResult[];
  return (list[index]?.rows ?? []) as T[];
}

async function executeOn(client: PoolClient, statement: SqlFragment): Promise<string> {
  const call = preparedCall(statement);
  const name = `${call.name}_t`;
  let prepared = preparedOnClient.get(client);
  if (!prepared) preparedOnClient.set(client, (prepared = new Set()));
  if (!prepared.has(name)) {
    await client.query(`prepare ${name} as ${call.positional}`);
    prepared.add(name);
  }
  return executeText(name, call.literals);
}

/**
 * Runs `work` in a short transaction on a connection of `em`'s pool: rolled back when `work`
 * throws before `commitWith` has committed (or when `commitWith`'s statement fails), the
 * connection given back either way (discarded when even the rollback failed).
 */
export async function inShortTransaction<R>(em: EntityManager, work: (tx: ShortTransaction) => Promise<R>): Promise<R> {
  const pool = await (em.getConnection() as unknown as NativePool).getNativeClient();
  const client = await pool.connect();
  // An object: TypeScript would narrow a `let` to its first value across the closures below.
  const at: { state: 'idle' | 'open' | 'done' } = { state: 'idle' };
  const tx: ShortTransaction = {
    async begin<T extends object>(first: SqlFragment) {
      if (at.state !== 'idle') throw new Error('short transaction already begun');
      const execute = await executeOn(client, first);
      at.state = 'open';
      return rowsAt<T>(await client.query(`begin; ${execute}`), 1);
    },
    async commitWith<T extends object>(last: SqlFragment) {
      if (at.state !== 'open') throw new Error('short transaction not open');
      const execute = await executeOn(client, last);
      const rows = rowsAt<T>(await client.query(`${execute}; commit`), 0);
      at.state = 'done';
      return rows;
    },
  };
  try {
    const result = await work(tx);
    if (at.state === 'open') throw new Error('short transaction left open: commitWith was not called');
    client.release();
    return result;
  } catch (error) {
    if (at.state !== 'open') {
      client.release();
      throw error;
    }
    try {
      await client.query('rollback');
      client.release();
    } catch (rollbackFailed) {
      client.release(rollbackFailed instanceof Error ? rollbackFailed : new Error(String(rollbackFailed)));
    }
    throw error;
  }
}
