import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact, Organization } from '../../db/entities/index.ts';
import { sql } from 'kysely';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { workspaceDb } from '../../db/workspace-db.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';
import { createOrg } from '../support/factories.ts';

describe('tenant scoping', () => {
  let stack: TestStack;
  let orgA: string;
  let orgB: string;

  beforeAll(async () => {
    stack = await createTestStack();
    orgA = (await createOrg(stack.orm)).org.id;
    orgB = (await createOrg(stack.orm)).org.id;
    const em = stack.orm.em.fork();
    em.create(Contact, { orgId: orgA, email: 'a@example.com' });
    em.create(Contact, { orgId: orgB, email: 'b@example.com' });
    await em.flush();
  });
  afterAll(() => stack.close());

  it('refuses to read a tenant table through an unscoped EntityManager', async () => {
    await expect(stack.orm.em.fork().find(Contact, {})).rejects.toThrow(/tenant/);
    await expect(stack.orm.em.fork().count(Contact, { email: 'a@example.com' })).rejects.toThrow(/tenant/);
  });

  it('refuses unscoped bulk updates and deletes too', async () => {
    const em = stack.orm.em.fork();
    await expect(em.nativeUpdate(Contact, { email: 'a@example.com' }, { company: 'x' })).rejects.toThrow(/tenant/);
    await expect(em.nativeDelete(Contact, { email: 'a@example.com' })).rejects.toThrow(/tenant/);
  });

  it('shows a scoped EntityManager only its own workspace, even when asked for another', async () => {
    const em = scopeToOrg(stack.orm.em, orgA);
    const all = await em.find(Contact, {});
    expect(all.map((c) => c.email)).toEqual(['a@example.com']);
    expect(await em.findOne(Contact, { email: 'b@example.com' })).toBeNull();
    expect(await em.findOne(Contact, { orgId: orgB })).toBeNull();
    expect(await em.nativeDelete(Contact, { email: 'b@example.com' })).toBe(0);
  });

  it('lets operator tooling opt out explicitly', async () => {
    const rows = await stack.orm.em.fork().find(Contact, {}, { ...ALL_TENANTS, orderBy: { email: 'asc' } });
    expect(rows.map((c) => c.email)).toEqual(['a@example.com', 'b@example.com']);
  });

  it("keeps an upsert through workspaceDb from updating another workspace's row on conflict", async () => {
    const theirs = await scopeToOrg(stack.orm.em.fork(), orgA).findOneOrFail(Contact, { email: 'a@example.com' });
    // A conflict target without org_id (the primary key) finds workspace A's row from workspace B.
    const upsert = (orgId: string, company: string) =>
      workspaceDb(stack.orm.em.fork(), orgId)
        .insertInto('contacts')
        .values({ id: theirs.id, org_id: orgId, email: 'a@example.com', created_at: sql<string>`now()`, updated_at: sql<string>`now()` })
        .onConflict((conflict) => conflict.column('id').doUpdateSet({ company }))
        .executeTakeFirstOrThrow();
    expect(Number((await upsert(orgB, 'Taken over')).numInsertedOrUpdatedRows)).toBe(0);
    expect((await scopeToOrg(stack.orm.em.fork(), orgA).findOneOrFail(Contact, { id: theirs.id })).company).toBe('');
    expect(Number((await upsert(orgA, 'Acme')).numInsertedOrUpdatedRows)).toBe(1);
    expect((await scopeToOrg(stack.orm.em.fork(), orgA).findOneOrFail(Contact, { id: theirs.id })).company).toBe('Acme');
  });

  it('does not scope the organizations table itself', async () => {
    expect(await stack.orm.em.fork().count(Organization, {})).toBe(2);
  });

  it('enforces one email per workspace in the database', async () => {
    const em = scopeToOrg(stack.orm.em, orgA);
    em.create(Contact, { orgId: orgA, email: 'a@example.com' });
    await expect(em.flush()).rejects.toThrow(/duplicate key|unique/i);
    const other = scopeToOrg(stack.orm.em, orgB);
    other.create(Contact, { orgId: orgB, email: 'a@example.com' });
    await expect(other.flush()).resolves.toBeUndefined();
  });
});
