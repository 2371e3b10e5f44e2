/**
 * A piece of SQL with named parameters (`:name`, MikroORM's raw named-parameter syntax), for
 * statements composed from several repositories' parts (e.g. a send's acceptance: quota, thread
 * placement, idempotent answer). Each part prefixes its parameter and CTE names so parts compose
 * without clashes.
 */
export interface SqlFragment {
  sql: string;
  params: Record<string, unknown>;
}
