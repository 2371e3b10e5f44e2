import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { HeraldDb } from '../../db/orm.ts';
import { tenantTableNames } from '../../db/orm.ts';
import { WorkspaceScope } from '../../db/workspace-db.ts';

/** Statements compiled (not run) through the workspace plugin: the SQL it writes and its parameters. */
const ORG = 'org_0000000000000000000a';
const db = new Kysely<HeraldDb>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (k) => new PostgresIntrospector(k),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
}).withPlugin(new WorkspaceScope(ORG, new Set(tenantTableNames())));

describe('workspaceDb: every statement confined to one workspace', () => {
  it('adds the workspace to a read of a workspace table', () => {
    const query = db.selectFrom('segments').select(['id', 'type']).where('id', '=', 'seg_1').compile();
    expect(query.sql).toBe('select "id", "type" from "segments" where "id" = $1 and "segments"."org_id" = $2');
    expect(query.parameters).toEqual(['seg_1', ORG]);
  });

  it('qualifies the condition with the alias a statement gives the table', () => {
    const query = db.selectFrom('contacts as c').select('c.email').compile();
    expect(query.sql).toBe('select "c"."email" from "contacts" as "c" where "c"."org_id" = $1');
  });

  it("puts a joined table's condition in its ON, so a left join keeps unmatched rows", () => {
    const query = db
      .selectFrom('segments as s')
      .leftJoin('segment_members as m', 'm.segment_id', 's.id')
      .select(['s.id', (eb) => eb.fn.count('m.contact_id').as('members')])
      .groupBy('s.id')
      .compile();
    expect(query.sql).toBe(
      'select "s"."id", count("m"."contact_id") as "members" from "segments" as "s" left join "segment_members" as "m" on "m"."segment_id" = "s"."id" and "m"."org_id" = $1 where "s"."org_id" = $2 group by "s"."id"',
    );
  });

  it('scopes subqueries and common table expressions at any depth, and leaves platform tables alone', () => {
    const query = db
      .with('members', (qb) => qb.selectFrom('segment_members').select('contact_id').where('segment_id', '=', 'seg_1'))
      .selectFrom('contacts')
      .innerJoin('organizations', 'organizations.id', 'contacts.org_id')
      .select('contacts.id')
      .where('contacts.id', 'in', (qb) => qb.selectFrom('members').select('contact_id'))
      .where('contacts.id', 'not in', (qb) => qb.selectFrom('suppressions').select('email'))
      .compile();
    expect(query.sql).toBe(
      'with "members" as (select "contact_id" from "segment_members" where "segment_id" = $1 and "segment_members"."org_id" = $2) ' +
        'select "contacts"."id" from "contacts" inner join "organizations" on "organizations"."id" = "contacts"."org_id" ' +
        'where "contacts"."id" in (select "contact_id" from "members") and "contacts"."id" not in (select "email" from "suppressions" where "suppressions"."org_id" = $3) and "contacts"."org_id" = $4',
    );
    expect(query.parameters).toEqual(['seg_1', ORG, ORG, ORG]);
  });

  it('confines updates and deletes to the workspace', () => {
    const update = db.updateTable('segments').set({ name: 'Renamed' }).where('id', '=', 'seg_1').compile();
    expect(update.sql).toBe('update "segments" set "name" = $1 where "id" = $2 and "segments"."org_id" = $3');
    const remove = db.deleteFrom('segment_members').where('contact_id', '=', 'con_1').returning('segment_id').compile();
    expect(remove.sql).toBe(
      'delete from "segment_members" where "contact_id" = $1 and "segment_members"."org_id" = $2 returning "segment_id"',
    );
  });

  it('takes an insert into a workspace table only when every row belongs to the workspace', () => {
    const row = { segment_id: 'seg_1', contact_id: 'con_1', created_at: new Date(0) };
    expect(() =>
      db
        .insertInto('segment_members')
        .values({ ...row, org_id: ORG })
        .compile(),
    ).not.toThrow();
    expect(() =>
      db
        .insertInto('segment_members')
        .values([
          { ...row, org_id: ORG },
          { ...row, contact_id: 'con_2', org_id: 'org_other' },
        ])
        .compile(),
    ).toThrow(/must set org_id/);
    expect(() =>
      db
        .insertInto('segment_members')
        .values({ ...row, org_id: sql<string>`'org_other'` })
        .compile(),
    ).toThrow(/must set org_id/);
    expect(() =>
      db
        .insertInto('segment_members')
        .columns(['segment_id', 'contact_id'])
        .expression(db.selectFrom('contacts').select(['id', 'id']))
        .compile(),
    ).toThrow(/must set org_id/);
  });

  it('confines the update of an insert ... on conflict do update to a row of the workspace', () => {
    const row = { segment_id: 'seg_1', contact_id: 'con_1', created_at: new Date(0), org_id: ORG };
    const upsert = db
      .insertInto('segment_members')
      .values(row)
      .onConflict((oc) =>
        oc
          .columns(['segment_id', 'contact_id'])
          .doUpdateSet({ created_at: new Date(1) })
          .where('segment_members.contact_id', '=', 'con_1'),
      )
      .compile();
    expect(upsert.sql).toBe(
      'insert into "segment_members" ("segment_id", "contact_id", "created_at", "org_id") values ($1, $2, $3, $4) ' +
        'on conflict ("segment_id", "contact_id") do update set "created_at" = $5 where "segment_members"."contact_id" = $6 and "segment_members"."org_id" = $7',
    );
    expect(upsert.parameters.at(-1)).toBe(ORG);
    const plain = db
      .insertInto('segment_members')
      .values(row)
      .onConflict((oc) => oc.column('contact_id').doUpdateSet({ created_at: new Date(1) }))
      .compile();
    expect(plain.sql).toMatch(/do update set "created_at" = \$5 where "segment_members"\."org_id" = \$6$/);
    const nothing = db
      .insertInto('segment_members')
      .values(row)
      .onConflict((oc) => oc.doNothing())
      .compile();
    expect(nothing.sql).toMatch(/on conflict do nothing$/);
  });

  it('does not take a schema-qualified name for another table', () => {
    const query = db.withSchema('public').selectFrom('contacts').select('id').compile();
    expect(query.sql).toBe('select "id" from "public"."contacts" where "contacts"."org_id" = $1');
  });
});
