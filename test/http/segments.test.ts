import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact, type ContactStatus } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey, unique } from '../support/factories.ts';
import { apiClient, expectError, type ApiResponse } from '../support/http.ts';

interface SegmentBody {
  _id: string;
  name: string;
  description: string;
  type: string;
  tags: string[];
  contactCount: number;
  createdAt: string;
  updatedAt: string;
}

type Request = ApiHarness['request'];

const data = (response: ApiResponse) => response.body.data as SegmentBody;

function expectStatus(response: ApiResponse, status: number): void {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
}

describe('segments', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(() => h.close());

  /** A workspace of its own, so member counts are not disturbed by other tests. */
  async function freshWorkspace(): Promise<{ orgId: string; request: Request }> {
    const own = await createOrgWithKey(h.stack.orm, { scopes: ['all'], rateLimitPerMinute: 100_000, burst: 10_000 });
    return { orgId: own.org.id, request: apiClient(h.api.url, own.key) };
  }

  async function addContacts(orgId: string, rows: { tags: string[]; status?: ContactStatus }[]): Promise<void> {
    const em = scopeToOrg(h.stack.orm.em, orgId);
    for (const row of rows)
      em.create(Contact, { orgId, email: `${unique('m')}@example.com`, tags: row.tags, status: row.status ?? 'active' });
    await em.flush();
  }

  const create = (request: Request, body: unknown) => request('POST', '/api/v1/segments', { headers: idem(), body });

  describe('POST /api/v1/segments', () => {
    it('creates a tag segment with exactly the spec fields (camelCase) and its live count', async () => {
      const { orgId, request } = await freshWorkspace();
      await addContacts(orgId, [{ tags: ['vip'] }, { tags: ['vip', 'beta'] }, { tags: ['beta'] }, { tags: [] }]);
      const response = await create(request, { name: '  VIPs  ', description: 'Our best customers', tags: [' vip ', 'vip', 'gold'] });
      expectStatus(response, 201);
      expect(response.body.data).toStrictEqual({
        _id: expect.stringMatching(/^[0-9a-f]{24}$/),
        name: 'VIPs',
        description: 'Our best customers',
        type: 'tag',
        tags: ['vip', 'gold'],
        contactCount: 2,
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
        updatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      });
    });

    it('creates an `all` segment when no tags are given: every contact of the workspace', async () => {
      const { orgId, request } = await freshWorkspace();
      await addContacts(orgId, [{ tags: [] }, { tags: ['a'] }, { tags: ['b'], status: 'unsubscribed' }]);
      const other = await freshWorkspace();
      await addContacts(other.orgId, [{ tags: [] }, { tags: ['a'] }]);
      for (const body of [{ name: 'Everyone' }, { name: 'Everyone', tags: [] }]) {
        const response = await create(request, body);
        expectStatus(response, 201);
        expect(data(response)).toMatchObject({ type: 'all', tags: [], description: '', contactCount: 3 });
      }
    });

    it('counts 0 for a workspace without contacts', async () => {
      const { request } = await freshWorkspace();
      expect(data(await create(request, { name: 'Empty', tags: ['x'] })).contactCount).toBe(0);
      expect(data(await create(request, { name: 'Empty all' })).contactCount).toBe(0);
    });

    it.each([
      [{}, 'name', 'object'],
      [{ name: '' }, 'name', 'min_length'],
      [{ name: '   ' }, 'name', 'min_length'],
      [{ name: 'x'.repeat(121) }, 'name', 'max_length'],
      [{ name: 5 }, 'name', 'string'],
      [{ name: null }, 'name', 'string'],
      [{ name: 'S', description: 'd'.repeat(501) }, 'description', 'max_length'],
      [{ name: 'S', description: null }, 'description', 'string'],
      [{ name: 'S', tags: 'vip' }, 'tags', 'array'],
      [{ name: 'S', tags: [1] }, 'tags.0', 'string'],
      [{ name: 'S', tags: ['ok', ''] }, 'tags.1', 'min_length'],
      [{ name: 'S', tags: ['  '] }, 'tags.0', 'min_length'],
      [{ name: 'S', tags: ['t'.repeat(101)] }, 'tags.0', 'max_length'],
      [{ name: 'S', tags: Array.from({ length: 101 }, (_, i) => `t${i}`) }, 'tags', 'max_length'],
      [{ name: 'S', type: 'tag' }, 'type', 'literal'],
      [{ name: 'S', contact_count: 3 }, 'contact_count', 'unknown_field'],
    ])('answers 400 invalid_request for %j naming field %s', async (body, path, type) => {
      const response = await create(h.request, body);
      expectError(response, 400, 'invalid_request');
      const fields = (response.body.error?.details as { fields: { path: string; type: string; location: string }[] }).fields;
      expect(fields, JSON.stringify(fields)).toContainEqual(
        expect.objectContaining({ path, location: 'body', ...(type === 'object' ? {} : { type }) }),
      );
    });

    it('answers 400 for a body that is not an object', async () => {
      expectError(await create(h.request, ['name']), 400, 'invalid_request');
      expectError(await create(h.request, 'null'), 400, 'invalid_request');
    });

    it.each([
      ['a name of 1 character', { name: 'n' }],
      ['a name of 120 characters', { name: 'n'.repeat(120) }],
      ['an empty description', { name: 'S', description: '' }],
      ['a description of 500 characters', { name: 'S', description: 'd'.repeat(500) }],
      ['a tag of 1 character', { name: 'S', tags: ['t'] }],
      ['a tag of 100 characters', { name: 'S', tags: ['t'.repeat(100)] }],
      ['100 tags', { name: 'S', tags: Array.from({ length: 100 }, (_, i) => `t${i}`) }],
    ])('accepts %s', async (_label, body) => {
      const response = await create(h.request, body);
      expectStatus(response, 201);
      expect(data(response)).toMatchObject({ ...body, type: 'tags' in body ? 'tag' : 'all' });
    });

    it('replays the stored answer for the same Idempotency-Key and creates one segment', async () => {
      const { request } = await freshWorkspace();
      const headers = idem();
      const first = await request('POST', '/api/v1/segments', { headers, body: { name: 'Once', tags: ['a'] } });
      const replay = await request('POST', '/api/v1/segments', { headers, body: { name: 'Once', tags: ['a'] } });
      expectStatus(replay, 201);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body).toEqual(first.body);
      expect((await request('GET', '/api/v1/segments')).body.data).toHaveLength(1);
    });
  });

  describe('membership (contactCount)', () => {
    it('counts contacts carrying at least one of the tags, once each, whatever their status', async () => {
      const { orgId, request } = await freshWorkspace();
      await addContacts(orgId, [
        { tags: ['a'] },
        { tags: ['b'], status: 'unsubscribed' },
        { tags: ['a', 'b'], status: 'bounced' },
        { tags: ['b', 'c'], status: 'complained' },
        { tags: ['a'], status: 'suppressed' },
        { tags: ['c'] },
        { tags: [] },
      ]);
      const count = async (tags: string[]) => data(await create(request, { name: unique('s'), tags })).contactCount;
      expect(await count(['a'])).toBe(3);
      expect(await count(['b'])).toBe(3);
      expect(await count(['a', 'b'])).toBe(5);
      expect(await count(['a', 'b', 'c'])).toBe(6);
      expect(await count(['c', 'zzz'])).toBe(2);
      expect(await count(['zzz'])).toBe(0);
    });

    it('matches tags case-sensitively and exactly (no prefix or substring match)', async () => {
      const { orgId, request } = await freshWorkspace();
      await addContacts(orgId, [{ tags: ['VIP'] }, { tags: ['vip'] }, { tags: ['vip-2024'] }, { tags: ['Vip'] }]);
      const count = async (tags: string[]) => data(await create(request, { name: unique('s'), tags })).contactCount;
      expect(await count(['vip'])).toBe(1);
      expect(await count(['VIP'])).toBe(1);
      expect(await count(['vip', 'VIP', 'Vip'])).toBe(3);
      expect(await count(['vi'])).toBe(0);
    });

    it('never counts contacts of another workspace', async () => {
      const mine = await freshWorkspace();
      const theirs = await freshWorkspace();
      await addContacts(mine.orgId, [{ tags: ['shared'] }]);
      await addContacts(theirs.orgId, [{ tags: ['shared'] }, { tags: ['shared'] }, { tags: ['only-theirs'] }]);
      expect(data(await create(mine.request, { name: 'Shared', tags: ['shared'] })).contactCount).toBe(1);
      expect(data(await create(mine.request, { name: 'Theirs', tags: ['only-theirs'] })).contactCount).toBe(0);
      expect(data(await create(mine.request, { name: 'All' })).contactCount).toBe(1);
      expect(data(await create(theirs.request, { name: 'Shared', tags: ['shared'] })).contactCount).toBe(2);
    });

    it('is live: the list shows the count at the time of the request', async () => {
      const { orgId, request } = await freshWorkspace();
      const segment = data(await create(request, { name: 'Growing', tags: ['new'] }));
      expect(segment.contactCount).toBe(0);
      await addContacts(orgId, [{ tags: ['new'] }, { tags: ['new', 'old'] }]);
      const list = (await request('GET', '/api/v1/segments')).body.data as SegmentBody[];
      expect(list.find((s) => s._id === segment._id)?.contactCount).toBe(2);
    });
  });

  describe('GET /api/v1/segments', () => {
    it("lists the workspace's segments newest first, each with its own count, page by page", async () => {
      const { orgId, request } = await freshWorkspace();
      await addContacts(orgId, [{ tags: ['a'] }, { tags: ['a', 'b'] }, { tags: ['c'] }, { tags: [] }]);
      const expected: [string, number][] = [];
      for (const [tags, count] of [
        [['a'], 2],
        [['b'], 1],
        [['c'], 1],
        [[], 4],
        [['zzz'], 0],
        [['a', 'c'], 3],
      ] as const) {
        const response = await create(request, { name: unique('list'), tags: [...tags] });
        expected.push([data(response)._id, count]);
      }
      await create(h.request, { name: 'Another workspace', tags: ['a'] });
      const seen: [string, number][] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const query: string = `?limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const response = await request('GET', `/api/v1/segments${query}`);
        expectStatus(response, 200);
        const page = response.body.data as SegmentBody[];
        for (const item of page)
          expect(Object.keys(item).sort()).toEqual([
            '_id',
            'contactCount',
            'createdAt',
            'description',
            'name',
            'tags',
            'type',
            'updatedAt',
          ]);
        seen.push(...page.map((s) => [s._id, s.contactCount] as [string, number]));
        cursor = (response.body.meta as { pagination: { next_cursor: string | null } }).pagination.next_cursor;
        pages += 1;
      } while (cursor);
      expect(pages).toBe(2);
      expect(seen).toEqual([...expected].reverse());
    });

    it('answers an empty page for a workspace without segments', async () => {
      const { request } = await freshWorkspace();
      const response = await request('GET', '/api/v1/segments');
      expectStatus(response, 200);
      expect(response.body.data).toEqual([]);
      expect(response.body.meta?.pagination).toEqual({ limit: 50, has_more: false, next_cursor: null });
    });

    it.each(['0', '101', '-1', 'ten'])('answers 400 for limit=%s', async (limit) => {
      expectError(await h.request('GET', `/api/v1/segments?limit=${limit}`), 400, 'invalid_request');
    });

    it.each(['1', '100'])('accepts limit=%s', async (limit) => {
      expectStatus(await h.request('GET', `/api/v1/segments?limit=${limit}`), 200);
    });

    it('refuses a cursor of another list', async () => {
      for (let i = 0; i < 2; i += 1) await create(h.request, { name: `cursor ${i}` });
      const first = await h.request('GET', '/api/v1/segments?limit=1');
      const cursor = (first.body.meta as { pagination: { next_cursor: string } }).pagination.next_cursor;
      expectStatus(await h.request('GET', `/api/v1/segments?limit=1&cursor=${encodeURIComponent(cursor)}`), 200);
      expectError(await h.request('GET', `/api/v1/contacts?cursor=${encodeURIComponent(cursor)}`), 400, 'invalid_request');
    });
  });
});
