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

/**
 * SQL for the domain of the address `expr` as Herald compares domains: what follows its last
 * `@` (the whole text without one), lower-cased. split_part, not the regular expression
 * `[^@]*$`, which gives the same text at several times the CPU (a send's thread placement takes
 * the domain of some 40 addresses; inbound routing one per recipient).
 */
export const addressDomainSql = (expr: string): string => `lower(split_part(${expr}, '@', -1))`;
