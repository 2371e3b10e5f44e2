import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTemplatesAdmin } from '../../src/modules/templates/templates.admin.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient, expectError, type ApiResponse } from '../support/http.ts';

interface TemplateData {
  _id: string;
  name: string;
  description: string;
  subject: string;
  preview_text: string;
  html: string;
  category: string;
  tags: string[];
  folder_id: string | null;
  status: string;
  version: number;
  created_at: string;
  updated_at: string;
}

type Request = ReturnType<typeof apiClient>;
type Fields = { path: string; type: string; location: string }[];

const BASE = '/api/v1/templates';

function dataOf(response: ApiResponse, status = 200): TemplateData {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  expect(response.body.ok).toBe(true);
  return response.body.data as TemplateData;
}

function fieldsOf(response: ApiResponse): Fields {
  expectError(response, 400, 'invalid_request');
  return (response.body.error?.details as { fields: Fields }).fields;
}

function expectField(response: ApiResponse, path: string, type?: string): void {
  const fields = fieldsOf(response);
  expect(fields, JSON.stringify(fields)).toContainEqual(expect.objectContaining({ path, location: 'body', ...(type ? { type } : {}) }));
}

async function createTemplate(request: Request, body: Record<string, unknown> = {}): Promise<TemplateData> {
  return dataOf(await request('POST', BASE, { headers: idem(), body: { name: 'Welcome', ...body } }), 201);
}

async function patchTemplate(request: Request, id: string, body: Record<string, unknown>): Promise<ApiResponse> {
  return request('PATCH', `${BASE}/${id}`, { headers: idem(), body });
}

async function deleteTemplate(request: Request, id: string): Promise<ApiResponse> {
  return request('DELETE', `${BASE}/${id}`, { headers: idem() });
}

/** Every id of a list, walking all pages of `limit`. */
async function listAll(request: Request, limit = 100): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const response = await request('GET', `${BASE}?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const meta = response.body.meta as { pagination: { limit: number; has_more: boolean; next_cursor: string | null } };
    expect(meta.pagination.limit).toBe(limit);
    ids.push(...(response.body.data as TemplateData[]).map((t) => t._id));
    cursor = meta.pagination.next_cursor;
    expect(meta.pagination.has_more).toBe(cursor !== null);
    pages += 1;
  } while (cursor);
  return { ids, pages };
}

describe('templates', () => {
  let h: ApiHarness;
  let share: (templateId: string, orgId: string) => Promise<unknown>;
  const workspace = async () => {
    const created = await createOrgWithKey(h.stack.orm, { scopes: ['all'], rateLimitPerMinute: 100_000, burst: 10_000 });
    return { orgId: created.org.id, request: apiClient(h.api.url, created.key) };
  };

  beforeAll(async () => {
    h = await startApiHarness();
    const admin = createTemplatesAdmin({ orm: h.stack.orm });
    share = (templateId, orgId) => admin.shareTemplate({ templateId, orgId });
  });
  afterAll(() => h.close());

  describe('POST /api/v1/templates', () => {
    it('creates a draft at version 1 with every field of the spec', async () => {
      const response = await h.request('POST', BASE, {
        headers: idem(),
        body: {
          name: '  Monthly digest ',
          description: 'Sent on the first of the month',
          subject: 'Your {{month}} digest',
          preview_text: 'What happened this month',
          html: '<h1>Hello</h1>',
          category: 'newsletter',
          folder_id: 'folder-1',
          tags: ['news', ' news ', 'monthly'],
        },
      });
      const data = dataOf(response, 201);
      expect(data).toEqual({
        _id: expect.stringMatching(/^[0-9a-f]{24}$/),
        name: 'Monthly digest',
        description: 'Sent on the first of the month',
        subject: 'Your {{month}} digest',
        preview_text: 'What happened this month',
        html: '<h1>Hello</h1>',
        category: 'newsletter',
        tags: ['news', 'monthly'],
        folder_id: 'folder-1',
        status: 'draft',
        version: 1,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        updated_at: data.created_at,
      });
    });

    it('fills defaults for a body with only a name', async () => {
      expect(await createTemplate(h.request, { name: 'Bare' })).toMatchObject({
        name: 'Bare',
        description: '',
        subject: '',
        preview_text: '',
        html: '',
        category: 'other',
        tags: [],
        folder_id: null,
        status: 'draft',
        version: 1,
      });
    });

    it.each(['marketing', 'transactional', 'newsletter', 'welcome', 'other'])('accepts category %s', async (category) => {
      expect((await createTemplate(h.request, { category })).category).toBe(category);
    });

    it.each([
      ['name', { name: 'x' }],
      ['name', { name: 'x'.repeat(200) }],
      ['description', { description: 'x'.repeat(500) }],
      ['subject', { subject: 'x'.repeat(500) }],
      ['preview_text', { preview_text: 'x'.repeat(200) }],
      ['html', { html: 'x'.repeat(500_000) }],
      ['folder_id', { folder_id: 'f'.repeat(64) }],
      ['folder_id', { folder_id: null }],
      ['tags', { tags: Array.from({ length: 100 }, (_, i) => `${i}`.padStart(100, 't')) }],
      ['description', { description: '' }],
    ])('accepts %s at its bound: %#', async (field, body) => {
      const data = (await createTemplate(h.request, body)) as unknown as Record<string, unknown>;
      expect(data[field]).toEqual((body as Record<string, unknown>)[field]);
    });

    it.each([
      [{ name: undefined }, 'name', undefined],
      [{ name: '' }, 'name', 'min_length'],
      [{ name: '   ' }, 'name', 'min_length'],
      [{ name: 'x'.repeat(201) }, 'name', 'max_length'],
      [{ name: 42 }, 'name', 'string'],
      [{ name: null }, 'name', 'string'],
      [{ description: 'x'.repeat(501) }, 'description', 'max_length'],
      [{ description: null }, 'description', 'string'],
      [{ subject: 'x'.repeat(501) }, 'subject', 'max_length'],
      [{ subject: 'Hello\r\nBcc: victim@example.com' }, 'subject', 'check'],
      [{ preview_text: 'x'.repeat(201) }, 'preview_text', 'max_length'],
      [{ html: 'x'.repeat(500_001) }, 'html', 'max_length'],
      [{ html: 'before\u0000after' }, 'html', 'nul_character'],
      [{ html: 7 }, 'html', 'string'],
      [{ category: 'promotional' }, 'category', 'picklist'],
      [{ category: 'Marketing' }, 'category', 'picklist'],
      [{ folder_id: '' }, 'folder_id', 'min_length'],
      [{ folder_id: 'f'.repeat(65) }, 'folder_id', 'max_length'],
      [{ folder_id: 12 }, 'folder_id', 'string'],
      [{ tags: 'vip' }, 'tags', 'array'],
      [{ tags: [''] }, 'tags.0', 'min_length'],
      [{ tags: ['ok', 3] }, 'tags.1', 'string'],
      [{ tags: ['x'.repeat(101)] }, 'tags.0', 'max_length'],
      [{ tags: Array.from({ length: 101 }, (_, i) => `t${i}`) }, 'tags', 'max_length'],
      [{ status: 'published' }, 'status', 'unknown_field'],
      [{ version: 3 }, 'version', 'unknown_field'],
      [{ previewText: 'camelCase' }, 'previewText', 'unknown_field'],
    ])('answers 400 invalid_request for %j naming field %s', async (override, path, type) => {
      const body = { name: 'Valid', ...override };
      const response = await h.request('POST', BASE, { headers: idem(), body: JSON.parse(JSON.stringify(body)) as unknown });
      expectField(response, path, type);
    });

    it('lists every failing field at once', async () => {
      const response = await h.request('POST', BASE, {
        headers: idem(),
        body: { name: '', category: 'nope', tags: [1], extra: true },
      });
      expect(fieldsOf(response).map((f) => f.path)).toEqual(expect.arrayContaining(['name', 'category', 'tags.0', 'extra']));
    });
  });

  describe('GET /api/v1/templates/{id}', () => {
    it('returns the template as created', async () => {
      const created = await createTemplate(h.request, { subject: 'Hi' });
      expect(dataOf(await h.request('GET', `${BASE}/${created._id}`))).toEqual(created);
    });

    it('answers 400 for a malformed id and 404 for an unknown one', async () => {
      expectError(await h.request('GET', `${BASE}/not-an-id`), 400, 'invalid_request');
      expectError(await h.request('GET', `${BASE}/${'a'.repeat(24)}`), 404, 'not_found');
    });
  });

  describe('PATCH /api/v1/templates/{id}', () => {
    it('changes the given fields only and increases version by one', async () => {
      const created = await createTemplate(h.request, { subject: 'Old', tags: ['a'], folder_id: 'f1' });
      await sleep(5);
      const updated = dataOf(await patchTemplate(h.request, created._id, { subject: 'New', html: '<p>x</p>', tags: ['b', 'b', 'c'] }));
      expect(updated).toEqual({
        ...created,
        subject: 'New',
        html: '<p>x</p>',
        tags: ['b', 'c'],
        version: 2,
        updated_at: expect.any(String),
      });
      expect(Date.parse(updated.updated_at)).toBeGreaterThan(Date.parse(created.updated_at));
      expect(dataOf(await h.request('GET', `${BASE}/${created._id}`))).toEqual(updated);
    });

    it('increases version once per changing request, whatever the number of fields', async () => {
      const { _id } = await createTemplate(h.request);
      const steps: Record<string, unknown>[] = [
        { name: 'One' },
        { description: 'two', subject: 'two', preview_text: 'two' },
        { category: 'welcome' },
        { folder_id: 'x' },
        { folder_id: null },
        { tags: ['t'] },
      ];
      for (const [i, body] of steps.entries()) {
        expect(dataOf(await patchTemplate(h.request, _id, body)).version).toBe(i + 2);
      }
      expect(dataOf(await h.request('GET', `${BASE}/${_id}`))).toMatchObject({
        version: 7,
        folder_id: null,
        tags: ['t'],
        category: 'welcome',
      });
    });

    it('leaves version and updated_at alone when nothing changes', async () => {
      const created = await createTemplate(h.request, { subject: 'Same', tags: ['a', 'b'], folder_id: 'f' });
      await sleep(5);
      for (const body of [{}, { subject: 'Same' }, { name: 'Welcome', tags: ['a', 'b', 'a'], folder_id: 'f', status: 'draft' }]) {
        expect(dataOf(await patchTemplate(h.request, created._id, body))).toEqual(created);
      }
      expect(dataOf(await patchTemplate(h.request, created._id, { tags: ['b', 'a'] })).version).toBe(2);
    });

    it('moves between every pair of statuses', async () => {
      const { _id } = await createTemplate(h.request);
      const path = ['published', 'archived', 'draft', 'archived', 'published', 'draft'];
      for (const [i, status] of path.entries()) {
        expect(dataOf(await patchTemplate(h.request, _id, { status }))).toMatchObject({ status, version: i + 2 });
      }
    });

    it('accepts every field at its upper bound', async () => {
      const { _id } = await createTemplate(h.request);
      const body = {
        name: 'n'.repeat(200),
        description: 'd'.repeat(500),
        subject: 's'.repeat(500),
        preview_text: 'p'.repeat(200),
        html: 'h'.repeat(500_000),
        folder_id: 'f'.repeat(64),
        tags: Array.from({ length: 100 }, (_, i) => `${i}`.padStart(100, 't')),
      };
      expect(dataOf(await patchTemplate(h.request, _id, body))).toMatchObject({ ...body, version: 2 });
    });

    it.each([
      [{ status: 'active' }, 'status', 'picklist'],
      [{ status: 'PUBLISHED' }, 'status', 'picklist'],
      [{ status: null }, 'status', 'picklist'],
      [{ name: '' }, 'name', 'min_length'],
      [{ name: 'x'.repeat(201) }, 'name', 'max_length'],
      [{ description: 'x'.repeat(501) }, 'description', 'max_length'],
      [{ subject: 'x'.repeat(501) }, 'subject', 'max_length'],
      [{ subject: 'line\nbreak' }, 'subject', 'check'],
      [{ preview_text: 'x'.repeat(201) }, 'preview_text', 'max_length'],
      [{ html: 'x'.repeat(500_001) }, 'html', 'max_length'],
      [{ category: 'promo' }, 'category', 'picklist'],
      [{ folder_id: '' }, 'folder_id', 'min_length'],
      [{ tags: null }, 'tags', 'array'],
      [{ tags: ['ok', ''] }, 'tags.1', 'min_length'],
      [{ version: 9 }, 'version', 'unknown_field'],
      [{ created_at: '2020-01-01T00:00:00Z' }, 'created_at', 'unknown_field'],
    ])('answers 400 invalid_request for %j naming field %s and changes nothing', async (body, path, type) => {
      const created = await createTemplate(h.request);
      expectField(await patchTemplate(h.request, created._id, body), path, type);
      expect(dataOf(await h.request('GET', `${BASE}/${created._id}`))).toEqual(created);
    });

    it('answers 404 for an unknown id', async () => {
      expectError(await patchTemplate(h.request, 'b'.repeat(24), { name: 'x' }), 404, 'not_found');
    });
  });

  describe('DELETE /api/v1/templates/{id}', () => {
    it('removes an own template: hidden false, then 404 everywhere', async () => {
      const { _id } = await createTemplate(h.request);
      const response = await deleteTemplate(h.request, _id);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect(response.body.data).toEqual({ _id, deleted: true, hidden: false });
      expectError(await h.request('GET', `${BASE}/${_id}`), 404, 'not_found');
      expectError(await patchTemplate(h.request, _id, { name: 'x' }), 404, 'not_found');
      expectError(await deleteTemplate(h.request, _id), 404, 'not_found');
      expect((await listAll(h.request)).ids).not.toContain(_id);
    });

    it('answers 400 for a malformed id and 404 for an unknown one', async () => {
      expectError(await deleteTemplate(h.request, 'xyz'), 400, 'invalid_request');
      expectError(await deleteTemplate(h.request, 'c'.repeat(24)), 404, 'not_found');
    });
  });

  describe('GET /api/v1/templates (keyset pagination)', () => {
    it('walks every template exactly once, newest first', async () => {
      const own = await workspace();
      const created: string[] = [];
      for (let i = 0; i < 7; i += 1) created.push((await createTemplate(own.request, { name: `T${i}` }))._id);
      const walk = await listAll(own.request, 3);
      expect(walk.pages).toBe(3);
      expect(walk.ids).toEqual([...created].reverse());
    });

    it('defaults to 50 per page and refuses bad limits and cursors', async () => {
      const response = await h.request('GET', BASE);
      expect((response.body.meta as { pagination: { limit: number } }).pagination.limit).toBe(50);
      for (const limit of ['0', '101', 'x']) expectError(await h.request('GET', `${BASE}?limit=${limit}`), 400, 'invalid_request');
      expectError(await h.request('GET', `${BASE}?cursor=garbage`), 400, 'invalid_request');
    });
  });

  describe('organisation sharing', () => {
    it("shows a shared template in the grantee's list and GET, and to no other workspace", async () => {
      const owner = await workspace();
      const grantee = await workspace();
      const outsider = await workspace();
      const shared = await createTemplate(owner.request, { name: 'Shared', html: '<p>shared</p>', tags: ['s'] });
      const unshared = await createTemplate(owner.request, { name: 'Private' });
      await share(shared._id, grantee.orgId);

      expect(dataOf(await grantee.request('GET', `${BASE}/${shared._id}`))).toEqual(shared);
      expectError(await grantee.request('GET', `${BASE}/${unshared._id}`), 404, 'not_found');
      expect((await listAll(grantee.request)).ids).toEqual([shared._id]);

      expectError(await outsider.request('GET', `${BASE}/${shared._id}`), 404, 'not_found');
      expectError(await patchTemplate(outsider.request, shared._id, { name: 'x' }), 404, 'not_found');
      expectError(await deleteTemplate(outsider.request, shared._id), 404, 'not_found');
      expect((await listAll(outsider.request)).ids).toEqual([]);
      expect((await listAll(owner.request)).ids).toEqual([unshared._id, shared._id]);
    });

    it("refuses a grantee's PATCH with 403 TEMPLATE_SHARED_READ_ONLY and shows the owner's changes", async () => {
      const owner = await workspace();
      const grantee = await workspace();
      const template = await createTemplate(owner.request);
      await share(template._id, grantee.orgId);

      const refused = await patchTemplate(grantee.request, template._id, { name: 'Mine now', status: 'archived' });
      expectError(refused, 403, 'forbidden');
      expect(refused.body.error?.details).toEqual({ reason: 'TEMPLATE_SHARED_READ_ONLY' });
      expect(dataOf(await owner.request('GET', `${BASE}/${template._id}`))).toEqual(template);

      const changed = dataOf(await patchTemplate(owner.request, template._id, { status: 'published' }));
      expect(changed.version).toBe(2);
      expect(dataOf(await grantee.request('GET', `${BASE}/${template._id}`))).toEqual(changed);
    });

    it("a grantee's DELETE hides the template for the grantee only, and sharing again un-hides it", async () => {
      const owner = await workspace();
      const grantee = await workspace();
      const other = await workspace();
      const template = await createTemplate(owner.request);
      await share(template._id, grantee.orgId);
      await share(template._id, other.orgId);

      const hidden = await deleteTemplate(grantee.request, template._id);
      expect(hidden.status, JSON.stringify(hidden.body)).toBe(200);
      expect(hidden.body.data).toEqual({ _id: template._id, deleted: true, hidden: true });

      expectError(await grantee.request('GET', `${BASE}/${template._id}`), 404, 'not_found');
      expect((await listAll(grantee.request)).ids).toEqual([]);
      expectError(await deleteTemplate(grantee.request, template._id), 404, 'not_found');
      expectError(await patchTemplate(grantee.request, template._id, { name: 'x' }), 404, 'not_found');

      expect(dataOf(await owner.request('GET', `${BASE}/${template._id}`))).toEqual(template);
      expect(dataOf(await other.request('GET', `${BASE}/${template._id}`))).toEqual(template);

      await share(template._id, grantee.orgId);
      expect(dataOf(await grantee.request('GET', `${BASE}/${template._id}`))).toEqual(template);
      expect((await listAll(grantee.request)).ids).toEqual([template._id]);
    });

    it("the owner's DELETE removes the template and every share of it", async () => {
      const owner = await workspace();
      const grantee = await workspace();
      const template = await createTemplate(owner.request);
      await share(template._id, grantee.orgId);

      const removed = await deleteTemplate(owner.request, template._id);
      expect(removed.body.data).toEqual({ _id: template._id, deleted: true, hidden: false });
      expectError(await grantee.request('GET', `${BASE}/${template._id}`), 404, 'not_found');
      expect((await listAll(grantee.request)).ids).toEqual([]);
      expect(await createTemplatesAdmin({ orm: h.stack.orm }).listShares(template._id)).toEqual([]);
    });

    it('merges own and shared templates in one newest-first keyset walk', async () => {
      const owner = await workspace();
      const grantee = await workspace();
      const outsider = await workspace();
      const expected: string[] = [];
      const hiddenIds: string[] = [];
      for (let i = 0; i < 9; i += 1) {
        const source = i % 3 === 0 ? grantee : owner;
        const template = await createTemplate(source.request, { name: `M${i}` });
        if (source === owner) await share(template._id, grantee.orgId);
        if (i === 4) hiddenIds.push(template._id);
        else expected.push(template._id);
        await createTemplate(outsider.request, { name: `noise${i}` });
        if (i === 5) await createTemplate(owner.request, { name: 'not shared' });
      }
      for (const id of hiddenIds) expect((await deleteTemplate(grantee.request, id)).body.data).toMatchObject({ hidden: true });

      const walk = await listAll(grantee.request, 3);
      expect(walk.ids).toEqual([...expected].reverse());
      expect(walk.pages).toBe(3);
      for (const limit of [1, 2, 100]) expect((await listAll(grantee.request, limit)).ids).toEqual([...expected].reverse());
    });

    it("refuses another workspace's cursor for the same list", async () => {
      const owner = await workspace();
      const grantee = await workspace();
      for (let i = 0; i < 2; i += 1) await share((await createTemplate(owner.request))._id, grantee.orgId);
      const first = await grantee.request('GET', `${BASE}?limit=1`);
      const cursor = (first.body.meta as { pagination: { next_cursor: string } }).pagination.next_cursor;
      expect(cursor).toEqual(expect.any(String));
      expectError(await owner.request('GET', `${BASE}?cursor=${encodeURIComponent(cursor)}`), 400, 'invalid_request');
    });
  });
});
