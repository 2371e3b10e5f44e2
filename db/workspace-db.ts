import type { EntityManager } from '@mikro-orm/postgresql';
import {
  AliasNode,
  BinaryOperationNode,
  ColumnNode,
  type DeleteQueryNode,
  IdentifierNode,
  type InsertQueryNode,
  JoinNode,
  type Kysely,
  OnConflictNode,
  type KyselyPlugin,
  type OperationNode,
  OperationNodeTransformer,
  OperatorNode,
  PrimitiveValueListNode,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryId,
  QueryNode,
  type QueryResult,
  ReferenceNode,
  type RootOperationNode,
  type SelectQueryNode,
  TableNode,
  type UnknownRow,
  type UpdateQueryNode,
  ValueNode,
  ValuesNode,
} from 'kysely';
import { type HeraldDb, tenantTableNames } from './orm.ts';

/**
 * The one way to query a workspace's tables with SQL beyond the ORM's entity API (issue 18):
 * a Kysely instance, typed from the entities and bound to `em`'s transaction, whose every
 * statement is confined to one workspace. For each workspace table a statement names — in FROM,
 * a JOIN, an UPDATE or DELETE target, at any depth of subqueries and CTEs — the condition
 * `<table or alias>.org_id = <orgId>` is added (to WHERE, or to a join's ON so an outer join
 * keeps its meaning). An INSERT into a workspace table must set `org_id` to this workspace, and
 * its ON CONFLICT ... DO UPDATE updates a row of this workspace only (the condition joins its WHERE).
 *
 * The ORM's `tenant` filter does the same for entity queries; statements written as SQL text are
 * reviewed instead (test/unit/sql-review.test.ts): they name `org_id` or say why they need not.
 * `getKysely()` itself is called here only (eslint: no-restricted-syntax).
 */
export function workspaceDb(em: EntityManager, orgId: string): Kysely<HeraldDb> {
  if (orgId.length === 0) throw new Error('workspaceDb needs an orgId');
  return em.getKysely<HeraldDb>().withPlugin(new WorkspaceScope(orgId, TENANT_TABLES));
}

/**
 * Kysely over every workspace's rows, for platform work that spans them (queue claims,
 * reconcilers, metrics). `why` is for the reader, as the `/* all workspaces: … *\/` comment
 * of SQL text is.
 */
export function allWorkspacesDb(em: EntityManager, why: string): Kysely<HeraldDb> {
  if (why.trim().length === 0) throw new Error('allWorkspacesDb needs a reason');
  return em.getKysely<HeraldDb>();
}

const TENANT_TABLES: ReadonlySet<string> = new Set(tenantTableNames());

/** The Kysely plugin behind `workspaceDb`: rewrites each statement's tree before it is compiled. */
export class WorkspaceScope implements KyselyPlugin {
  readonly #scope: ScopeTransformer;

  constructor(orgId: string, tenantTables: ReadonlySet<string>) {
    this.#scope = new ScopeTransformer(orgId, tenantTables);
  }

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return this.#scope.transformNode(args.node, args.queryId);
  }

  transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return Promise.resolve(args.result);
  }
}

class ScopeTransformer extends OperationNodeTransformer {
  readonly #orgId: string;
  readonly #tenantTables: ReadonlySet<string>;

  constructor(orgId: string, tenantTables: ReadonlySet<string>) {
    super();
    this.#orgId = orgId;
    this.#tenantTables = tenantTables;
  }

  protected override transformSelectQuery(node: SelectQueryNode, queryId?: QueryId): SelectQueryNode {
    const transformed = super.transformSelectQuery(node, queryId);
    const scoped = this.#scopeJoins(transformed);
    return this.#andWhere(
      scoped,
      (transformed.from?.froms ?? []).flatMap((from) => this.#tenantReference(from)),
    );
  }

  protected override transformUpdateQuery(node: UpdateQueryNode, queryId?: QueryId): UpdateQueryNode {
    const transformed = super.transformUpdateQuery(node, queryId);
    const targets = [transformed.table, ...(transformed.from?.froms ?? [])].flatMap((table) => (table ? this.#tenantReference(table) : []));
    return this.#andWhere(this.#scopeJoins(transformed), targets);
  }

  protected override transformDeleteQuery(node: DeleteQueryNode, queryId?: QueryId): DeleteQueryNode {
    const transformed = super.transformDeleteQuery(node, queryId);
    const targets = [...transformed.from.froms, ...(transformed.using?.tables ?? [])].flatMap((table) => this.#tenantReference(table));
    return this.#andWhere(this.#scopeJoins(transformed), targets);
  }

  protected override transformInsertQuery(node: InsertQueryNode, queryId?: QueryId): InsertQueryNode {
    const transformed = super.transformInsertQuery(node, queryId);
    const table = transformed.into ? this.#tenantReference(transformed.into)[0] : undefined;
    if (table && !this.#setsThisWorkspace(transformed)) {
      throw new Error(`an insert into ${table} through workspaceDb must set org_id to the workspace's id`);
    }
    // ON CONFLICT DO UPDATE updates the row already there, which a conflict target without
    // org_id (a unique id) could find in another workspace: the update is confined too.
    const conflict = transformed.onConflict;
    if (table && conflict?.updates && !conflict.doNothing) {
      return { ...transformed, onConflict: OnConflictNode.cloneWithUpdateWhere(conflict, this.#condition(table)) };
    }
    return transformed;
  }

  /** The name a statement refers to `node` (a table, or an aliased table) by, when it is a workspace table: what org_id is qualified with. */
  #tenantReference(node: OperationNode): string[] {
    if (AliasNode.is(node) && TableNode.is(node.node) && IdentifierNode.is(node.alias)) {
      return this.#isTenant(node.node) ? [node.alias.name] : [];
    }
    if (TableNode.is(node) && this.#isTenant(node)) return [node.table.identifier.name];
    return [];
  }

  #isTenant(table: TableNode): boolean {
    const schema = table.table.schema?.name;
    return (schema === undefined || schema === 'public') && this.#tenantTables.has(table.table.identifier.name);
  }

  #condition(reference: string): OperationNode {
    return BinaryOperationNode.create(
      ReferenceNode.create(ColumnNode.create('org_id'), TableNode.create(reference)),
      OperatorNode.create('='),
      ValueNode.create(this.#orgId),
    );
  }

  #andWhere<T extends SelectQueryNode | UpdateQueryNode | DeleteQueryNode>(node: T, tables: string[]): T {
    return tables.reduce((scoped, table) => QueryNode.cloneWithWhere(scoped, this.#condition(table)), node);
  }

  /** Each joined workspace table's condition joins its ON (an outer join still keeps unmatched rows). */
  #scopeJoins<T extends SelectQueryNode | UpdateQueryNode | DeleteQueryNode>(node: T): T {
    if (!node.joins?.some((join) => this.#tenantReference(join.table).length > 0)) return node;
    const joins = node.joins.map((join) => {
      const [table] = this.#tenantReference(join.table);
      if (!table) return join;
      const condition = this.#condition(table);
      return join.on
        ? JoinNode.cloneWithOn(join, condition)
        : JoinNode.createWithOn(join.joinType === 'CrossJoin' ? 'InnerJoin' : join.joinType, join.table, condition);
    });
    return { ...node, joins };
  }

  /** Whether an insert's org_id column holds this workspace's id in every row it lists. */
  #setsThisWorkspace(node: InsertQueryNode): boolean {
    const column = node.columns?.findIndex((c) => c.column.name === 'org_id') ?? -1;
    if (column < 0 || !node.values || !ValuesNode.is(node.values)) return false;
    return node.values.values.every((row) => {
      if (PrimitiveValueListNode.is(row)) return row.values[column] === this.#orgId;
      const value = row.values[column];
      return value !== undefined && ValueNode.is(value) && value.value === this.#orgId;
    });
  }
}
