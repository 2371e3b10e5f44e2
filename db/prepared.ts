import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import type { SqlFragment } from './sql-fragment.ts';

/**
 * Server-side prepared statements for the hottest statements (a send's acceptance): PostgreSQL
 * parses, analyses and plans such a statement once per connection instead of on every call,
 * which was about a third of its CPU per accepted send. MikroORM inlines every parameter and has
 * no named statements, so this prepares with SQL (`PREPARE name AS …` with `$n` parameters) and
 * runs `EXECUTE name(literal, …)`, whose text is cheap to parse.
 *
 * A statement is prepared on the connection of the caller's transaction, the first time that
 * connection runs it (a prepared statement outlives a rollback, and lives as long as the
 * connection). Outside a transaction the connection of the next statement is not known, so the
 * statement runs as a plain one.
 *
 * Parameters are SqlFragment's named `:name`s. A value is a string, number, boolean, Date, null,
 * or an array of strings, which is bound as a PostgreSQL array literal: write `:name::text[]`
 * (not `array[:name]`) in the SQL.
 */

type Scalar = string | number | boolean | Date | null | undefined;
export type PreparedValue = Scalar | readonly (string | null)[];

interface Shape {
  name: string;
  positional: string;
  order: string[];
}

/** `:name` that is not part of a `::type` cast. */
const NAMED_PARAMETER = /(?<![:\w]):([A-Za-z_]\w*)/g;
const SHAPES_MAX = 256;
const shapes = new Map<string, Shape>();
/** The statements prepared on each pooled connection (keyed by Kysely's connection object, one per pg client). */
const preparedOn = new WeakMap<object, Set<string>>();

function shapeOf(sql: string): Shape {
  const cached = shapes.get(sql);
  if (cached) return cached;
  const order: string[] = [];
  const positional = sql.replace(NAMED_PARAMETER, (_match, name: string) => {
    let index = order.indexOf(name);
    if (index < 0) index = order.push(name) - 1;
    return `$${index + 1}`;
  });
  const shape = { name: `herald_${createHash('sha256').update(positional).digest('hex').slice(0, 24)}`, positional, order };
  if (shapes.size >= SHAPES_MAX) shapes.delete(shapes.keys().next().value!);
  shapes.set(sql, shape);
  return shape;
}

/** A string as an escape-string literal: correct whatever standard_conforming_strings says. */
function quoteText(value: string): string {
  return `E'${value.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
}

/** An array of strings as the text of a PostgreSQL array literal (`{"a","b"}`). */
export function arrayLiteral(values: readonly (string | null)[]): string {
  return `{${values.map((v) => (v === null ? 'NULL' : `"${v.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`)).join(',')}}`;
}

/** A parameter value as a SQL literal of unknown type (PostgreSQL coerces it to the parameter's type). */
export function literalOf(value: PreparedValue, name = 'value'): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'string') return quoteText(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`prepared parameter ${name} is not a finite number`);
    return `'${value}'`;
  }
  if (typeof value === 'boolean') return value ? `'true'` : `'false'`;
  if (value instanceof Date) return quoteText(value.toISOString());
  if (Array.isArray(value)) return quoteText(arrayLiteral(value));
  throw new Error(`prepared parameter ${name} has an unsupported type`);
}

/** The values of `params` in the statement's order, each checked. */
function valuesOf(shape: Shape, params: Record<string, unknown>): PreparedValue[] {
  return shape.order.map((name) => {
    if (!(name in params)) throw new Error(`prepared statement parameter :${name} has no value`);
    return params[name] as PreparedValue;
  });
}

/** What this needs of MikroORM's transaction context (a Kysely transaction). */
interface TransactionContext {
  getExecutor(): { provideConnection<R>(consumer: (connection: object) => Promise<R>): Promise<R> };
}

/** The connection of the transaction `em` runs in, or null outside a transaction. */
async function transactionConnection(em: EntityManager): Promise<object | null> {
  const context = em.getTransactionContext<TransactionContext>();
  if (!context) return null;
  return context.getExecutor().provideConnection((connection) => Promise.resolve(connection));
}

/** A statement's prepared form: its name, its `$n` text (for PREPARE) and its values as literals (for EXECUTE). */
export function preparedCall(statement: SqlFragment): { name: string; positional: string; literals: string[] } {
  const shape = shapeOf(statement.sql);
  const literals = valuesOf(shape, statement.params).map((value, i) => literalOf(value, shape.order[i]));
  return { name: shape.name, positional: shape.positional, literals };
}

/**
 * Runs `statement` as a prepared statement on the caller's transaction connection (preparing it
 * there the first time), or as a plain statement outside a transaction. Returns its rows.
 */
export async function executePrepared<T extends object>(em: EntityManager, statement: SqlFragment): Promise<T[]> {
  const shape = shapeOf(statement.sql);
  const { literals } = preparedCall(statement);
  const connection = await transactionConnection(em);
  if (!connection) {
    // The same statement with its literals in place of the parameters.
    const direct = statement.sql.replace(NAMED_PARAMETER, (_match, name: string) => literals[shape.order.indexOf(name)]!);
    return em.execute<T[]>(direct, []);
  }
  let prepared = preparedOn.get(connection);
  if (!prepared) preparedOn.set(connection, (prepared = new Set()));
  if (!prepared.has(shape.name)) {
    await em.execute(`prepare ${shape.name} as ${shape.positional}`, []);
    prepared.add(shape.name);
  }
  return em.execute<T[]>(executeText(shape.name, literals), []);
}

/** The EXECUTE of a prepared statement with its literals. */
export function executeText(name: string, literals: readonly string[]): string {
  return `execute ${name}${literals.length > 0 ? `(${literals.join(', ')})` : ''}`;
}

/** What this needs of MikroORM's PostgreSQL connection: the pg pool behind it. */
export interface NativePool {
  getNativeClient(): Promise<Pool>;
}

/**
 * Runs a read outside any transaction as a prepared statement of the pg pool behind `em`, by
 * name at the protocol level: pg sends Parse the first time a pooled connection runs it, then
 * only Bind and Execute, so PostgreSQL parses and analyses it once per connection (and plans it
 * once when the generic plan is as good as a custom one), and the values travel as parameters
 * instead of being inlined into the text by MikroORM (whose formatting walks the whole
 * statement on every call). Inside a transaction (on its connection), or with an array value
 * (which MikroORM inlines as a list, `in (:ids)`), it runs through `em.execute` as before.
 * Errors are pg's own (src/db/unavailable.ts reads them).
 */
export async function queryPrepared<T extends object>(em: EntityManager, statement: SqlFragment): Promise<T[]> {
  const query = namedQueryOf(statement);
  if (em.getTransactionContext() || query.values.some((value) => Array.isArray(value)))
    return em.execute<T[]>(statement.sql, statement.params);
  const pool = await (em.getConnection() as unknown as NativePool).getNativeClient();
  return (await pool.query<T>(query)).rows;
}

/**
 * The pg query config (name, `$n` text, values) queryPrepared runs for `statement`. Its name is
 * not executePrepared's: protocol-level and SQL-level prepared statements share one namespace per
 * connection, and a pooled connection may run the same text both ways (PREPARE of a name already
 * taken fails).
 */
export function namedQueryOf(statement: SqlFragment): { name: string; text: string; values: PreparedValue[] } {
  const shape = shapeOf(statement.sql);
  return { name: `${shape.name}_q`, text: shape.positional, values: valuesOf(shape, statement.params) };
}
