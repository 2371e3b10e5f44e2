import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact, type ContactStatus } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { decodeEntities, signedInPerson } from '../support/dashboard-client.ts';

type Page = { data: { email: string }[]; meta: { pagination: { has_more: boolean; next_cursor: string | null } } };

/** A contact of the fixture as the test knows it: the order and the filters are computed here, not by Herald. */
interface Row {
  id: string;
  email: string;
  zed: boolean;
  wide: boolean;
  status: ContactStatus;
  createdAt: Date;
}

/** Contacts of the workspace; more than the repository's few-matches probe (1,000) for each filter alone. */
const COUNT = 2_400;
/** Zed contacts that also carry `wide`: the small intersection. */
const SMALL = new Set([100, 220, 1_000, 1_500, 2_000]);
const BASE = Date.now() - 10_000_000;

/**
 * Two filters that each match more than a thousand contacts, with an empty, a small and a
 * common intersection: the same rows in the same order (newest first, then the id) as the
 * filters themselves select, on every page, through GET /api/v1/contacts and the dashboard.
 * Half the contacts are "Zed" (even n, active), the other half carry the tag `wide` and are
 * unsubscribed (odd n), and five Zed contacts carry `wide` too; pairs share a creation instant,
 * and ids are not in creation order, so the id breaks the ties.
 */
describe('GET /api/v1/contacts and /dashboard/contacts with two broad filters', () => {
  let h: ApiHarness;
  const rows: Row[] = [];
  const expected = (keep: (row: Row) => boolean) =>
    rows
      .filter(keep)
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1))
      .map((row) => row.email);

  /** Every page of an API query, `limit` at a time, by its cursor. */
  async function apiPages(query: string, limit: number): Promise<string[][]> {
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const response = await h.request(
        'GET',
        `/api/v1/contacts?${query}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      const page = response.body as unknown as Page;
      pages.push(page.data.map((contact) => contact.email));
      cursor = page.meta.pagination.has_more ? page.meta.pagination.next_cursor : null;
    } while (cursor && pages.length < 4);
    return pages;
  }

  beforeAll(async () => {
    h = await startApiHarness();
    const orgId = h.workspace.org.id;
    const em = scopeToOrg(h.stack.orm.em.fork(), orgId);
    for (let n = 1; n <= COUNT; n += 1) {
      const zed = n % 2 === 0;
      const row: Row = {
        id: ((n * 7_919) % 10_007).toString(16).padStart(24, '0'),
        email: `p${n}@example.org`,
        zed,
        wide: !zed || SMALL.has(n),
        status: zed ? 'active' : 'unsubscribed',
        createdAt: new Date(BASE - Math.floor(n / 2) * 1_000),
      };
      rows.push(row);
      em.create(Contact, {
        id: row.id,
        orgId,
        email: row.email,
        firstName: zed ? 'Zed' : 'Yan',
        lastName: `Last${n}`,
        tags: row.wide ? ['wide'] : [],
        customFields: {},
        status: row.status,
        createdAt: row.createdAt,
        updatedAt: row.createdAt,
      });
    }
    await em.flush();
  });
  afterAll(async () => h?.close());

  it('answers no contact when the intersection is empty', async () => {
    expect(await apiPages('search=zed&status=unsubscribed', 50)).toEqual([[]]);
    expect(await apiPages('search=yan&status=active', 50)).toEqual([[]]);
  });

  it('pages through a small intersection in order', async () => {
    const all = expected((row) => row.zed && row.wide);
    expect(all).toHaveLength(SMALL.size);
    expect(await apiPages('search=zed&tag=wide', 2)).toEqual([all.slice(0, 2), all.slice(2, 4), all.slice(4)]);
  });

  it('pages through a common intersection in order', async () => {
    const all = expected((row) => row.wide && row.status === 'unsubscribed');
    expect(all.length).toBeGreaterThan(1_000);
    expect(await apiPages('tag=wide&status=unsubscribed', 50)).toEqual([0, 50, 100, 150].map((at) => all.slice(at, at + 50)));
    const zed = expected((row) => row.zed && row.status === 'active');
    expect(await apiPages('search=zed&status=active', 100)).toEqual([0, 100, 200, 300].map((at) => zed.slice(at, at + 100)));
  });

  it('gives the dashboard the same pages for its search with a tag or a status', async () => {
    const { client } = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: 'two-filters@example.com' });
    const emailsOf = (html: string) => [...html.matchAll(/href="\/dashboard\/contacts\/[0-9a-f]{24}">([^<]+)<\/a>/g)].map((m) => m[1]);

    const empty = await client.get('/dashboard/contacts?q=zed&status=unsubscribed');
    expect(empty.status).toBe(200);
    expect(empty.text).toContain('No contact matches.');

    const small = await client.get('/dashboard/contacts?q=zed&tag=wide');
    expect(emailsOf(small.text)).toEqual(expected((row) => row.zed && row.wide));
    expect(small.text).not.toContain('rel="next"');

    const common = expected((row) => row.zed && row.status === 'active');
    const first = await client.get('/dashboard/contacts?q=last1&status=active');
    expect(emailsOf(first.text)).toEqual(expected((row) => row.zed && row.status === 'active' && /^p1\d*@/.test(row.email)).slice(0, 50));
    const zedFirst = await client.get('/dashboard/contacts?q=zed&status=active');
    expect(emailsOf(zedFirst.text)).toEqual(common.slice(0, 50));
    const older = /href="(\/dashboard\/contacts\?[^"]*older[^"]+)" rel="next"/.exec(zedFirst.text)?.[1];
    expect(older).toBeDefined();
    const second = await client.get(decodeEntities(older!));
    expect(emailsOf(second.text)).toEqual(common.slice(50, 100));
  });
});
