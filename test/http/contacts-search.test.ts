import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient, expectError, fieldsOf } from '../support/http.ts';

type ContactBody = { _id: string; email: string };
type Page = { data: ContactBody[]; meta: { pagination: { has_more: boolean; next_cursor: string | null } } };

/** GET /api/v1/contacts?search= (a prefix of the email or name) and ?tag= (Herald extensions). */
describe('GET /api/v1/contacts search and tag filters', () => {
  let h: ApiHarness;
  const emailsOf = async (query: string, request = h.request) => {
    const response = await request('GET', `/api/v1/contacts?${query}`);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return (response.body as unknown as Page).data.map((c) => c.email).sort();
  };

  beforeAll(async () => {
    h = await startApiHarness();
    const em = scopeToOrg(h.stack.orm.em.fork(), h.workspace.org.id);
    const rows: [string, string, string, string[]][] = [
      ['Ada.Lovelace@example.com', 'Ada', 'Lovelace', ['vip', 'math']],
      ['adam@example.com', 'Adam', 'Smith', ['vip']],
      ['grace@example.com', 'Grace', 'Hopper', ['navy']],
      ['hopper.fan@example.com', 'Eve', 'Adams', ['VIP']],
      ['under_score@example.com', 'Under', 'Score', []],
      ['underXscore@example.com', 'Other', 'Person', []],
      ['pct%@example.com', 'Per', 'Cent', []],
    ];
    for (const [email, firstName, lastName, tags] of rows)
      em.create(Contact, { orgId: h.workspace.org.id, email, firstName, lastName, tags });
    await em.flush();
  });
  afterAll(async () => h?.close());

  it('finds contacts whose email, full name or last name starts with the search, in any case', async () => {
    expect(await emailsOf('search=ada')).toEqual(['Ada.Lovelace@example.com', 'adam@example.com', 'hopper.fan@example.com']);
    expect(await emailsOf('search=ADA%20LOVE')).toEqual(['Ada.Lovelace@example.com']);
    expect(await emailsOf('search=hopper')).toEqual(['grace@example.com', 'hopper.fan@example.com']);
    expect(await emailsOf('search=grace%40example.com')).toEqual(['grace@example.com']);
    // A prefix, not a part: "lace" is inside Lovelace but starts nothing.
    expect(await emailsOf('search=lace')).toEqual([]);
  });

  it('takes _ and % in the search literally', async () => {
    expect(await emailsOf('search=under_')).toEqual(['under_score@example.com']);
    expect(await emailsOf('search=pct%25')).toEqual(['pct%@example.com']);
    expect(await emailsOf('search=%25')).toEqual([]);
  });

  it('filters by tag exactly (case included), combined with search and status', async () => {
    expect(await emailsOf('tag=vip')).toEqual(['Ada.Lovelace@example.com', 'adam@example.com']);
    expect(await emailsOf('tag=VIP')).toEqual(['hopper.fan@example.com']);
    expect(await emailsOf('tag=vip&search=adam')).toEqual(['adam@example.com']);
    expect(await emailsOf('tag=vip&status=unsubscribed')).toEqual([]);
  });

  it('pages through a filtered list with its cursor', async () => {
    const first = await h.request('GET', '/api/v1/contacts?search=ada&limit=2');
    const body = first.body as unknown as Page;
    expect(body.data).toHaveLength(2);
    expect(body.meta.pagination.has_more).toBe(true);
    const next = await h.request(
      'GET',
      `/api/v1/contacts?search=ada&limit=2&cursor=${encodeURIComponent(body.meta.pagination.next_cursor!)}`,
    );
    expect(next.status, JSON.stringify(next.body)).toBe(200);
    const all = [...body.data, ...(next.body as unknown as Page).data].map((c) => c.email).sort();
    expect(all).toEqual(['Ada.Lovelace@example.com', 'adam@example.com', 'hopper.fan@example.com']);
  });

  it.each([
    ['search=', 'search'],
    ['search=%20%20', 'search'],
    [`search=${'a'.repeat(321)}`, 'search'],
    ['tag=', 'tag'],
    [`tag=${'t'.repeat(101)}`, 'tag'],
  ])('answers 400 invalid_request for %s', async (query, path) => {
    const response = await h.request('GET', `/api/v1/contacts?${query}`);
    expectError(response, 400, 'invalid_request');
    expect(fieldsOf(response).map((f) => [f.path, f.location])).toEqual([[path, 'query']]);
  });

  it("never finds another workspace's contacts", async () => {
    const other = await createOrgWithKey(h.stack.orm);
    const request = apiClient(h.api.url, other.key);
    const em = scopeToOrg(h.stack.orm.em.fork(), other.org.id);
    em.create(Contact, { orgId: other.org.id, email: 'ada@theirs.example', tags: ['vip'] });
    await em.flush();
    expect(await emailsOf('search=ada')).not.toContain('ada@theirs.example');
    expect(await emailsOf('tag=vip', request)).toEqual(['ada@theirs.example']);
  });
});
