import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Event } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { expectError } from '../support/http.ts';

describe('contacts (the first resource on the API core)', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(() => h.close());

  describe('POST /api/v1/contacts', () => {
    it('creates a contact with the spec fields, normalised email and defaults', async () => {
      const response = await h.request('POST', '/api/v1/contacts', {
        headers: idem(),
        body: { email: '  Ada.Lovelace@Example.COM ', first_name: 'Ada', tags: ['vip', 'vip', 'beta'] },
      });
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      expect(response.body.data).toEqual({
        _id: expect.stringMatching(/^[0-9a-f]{24}$/),
        email: 'Ada.Lovelace@example.com',
        firstName: 'Ada',
        lastName: '',
        company: '',
        tags: ['vip', 'beta'],
        customFields: {},
        status: 'active',
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      expect(response.body.meta?.rate_limit).toMatchObject({ limit: 10_000, requests_per_minute: 100_000 });
    });

    it('writes contact.created in the same transaction', async () => {
      const created = await h.request('POST', '/api/v1/contacts', { headers: idem(), body: { email: 'event@example.com' } });
      const id = (created.body.data as { _id: string })._id;
      const events = await scopeToOrg(h.stack.orm.em, h.workspace.org.id).find(Event, { type: 'contact.created' });
      expect(events.map((e) => (e.data.contact as { _id: string })._id)).toContain(id);
    });

    it('answers 409 conflict for an email that exists (after normalisation)', async () => {
      await h.request('POST', '/api/v1/contacts', { headers: idem(), body: { email: 'dup@example.com' } });
      const response = await h.request('POST', '/api/v1/contacts', { headers: idem(), body: { email: 'dup@EXAMPLE.com' } });
      expectError(response, 409, 'conflict');
    });

    it.each([
      [{}, 'email', 'object'],
      [{ email: 'not-an-email' }, 'email', 'email'],
      [{ email: 42 }, 'email', 'string'],
      [{ email: 'a@example.com', tags: 'vip' }, 'tags', 'array'],
      [{ email: 'a@example.com', tags: [''] }, 'tags.0', 'min_length'],
      [{ email: 'a@example.com', custom_fields: [] }, 'custom_fields', 'custom'],
      [{ email: 'a@example.com', custom_fields: null }, 'custom_fields', 'custom'],
      [{ email: 'a@example.com', first_name: 'x'.repeat(201) }, 'first_name', 'max_length'],
      [{ email: 'a@example.com', firstName: 'Ada' }, 'firstName', 'unknown_field'],
    ])('answers 400 invalid_request for %j naming field %s', async (body, path, type) => {
      const response = await h.request('POST', '/api/v1/contacts', { headers: idem(), body });
      expectError(response, 400, 'invalid_request');
      const fields = (response.body.error?.details as { fields: { path: string; type: string; location: string }[] }).fields;
      expect(fields, JSON.stringify(fields)).toContainEqual(
        expect.objectContaining({ path, location: 'body', ...(type === 'object' ? {} : { type }) }),
      );
    });

    it('lists every failing field at once', async () => {
      const response = await h.request('POST', '/api/v1/contacts', {
        headers: idem(),
        body: { email: 'nope', tags: [1], company: 5, extra: true },
      });
      const fields = (response.body.error?.details as { fields: { path: string }[] }).fields.map((f) => f.path);
      expect(fields).toEqual(expect.arrayContaining(['email', 'tags.0', 'company', 'extra']));
    });
  });

  describe('GET /api/v1/contacts/{id}', () => {
    it('returns a contact of the workspace', async () => {
      const created = await h.request('POST', '/api/v1/contacts', { headers: idem(), body: { email: 'get@example.com' } });
      const id = (created.body.data as { _id: string })._id;
      const response = await h.request('GET', `/api/v1/contacts/${id}`);
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual(created.body.data);
    });

    it('answers 400 for a malformed id and 404 for an unknown one', async () => {
      expectError(await h.request('GET', '/api/v1/contacts/not-an-id'), 400, 'invalid_request');
      expectError(await h.request('GET', `/api/v1/contacts/${'a'.repeat(24)}`), 404, 'not_found');
    });
  });

  describe('GET /api/v1/contacts (keyset pagination)', () => {
    it('walks every contact exactly once, newest first, with signed cursors', async () => {
      const { createOrgWithKey } = await import('../support/factories.ts');
      const { apiClient } = await import('../support/http.ts');
      const own = await createOrgWithKey(h.stack.orm, { scopes: ['all'], rateLimitPerMinute: 100_000, burst: 10_000 });
      const request = apiClient(h.api.url, own.key);
      const created: string[] = [];
      for (let i = 0; i < 7; i += 1) {
        const response = await request('POST', '/api/v1/contacts', { headers: idem(), body: { email: `page${i}@example.com` } });
        created.push((response.body.data as { _id: string })._id);
      }
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const query: string = `?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const response = await request('GET', `/api/v1/contacts${query}`);
        expect(response.status, JSON.stringify(response.body)).toBe(200);
        const meta = response.body.meta as { pagination: { limit: number; has_more: boolean; next_cursor: string | null } };
        expect(meta.pagination.limit).toBe(3);
        seen.push(...(response.body.data as { _id: string }[]).map((c) => c._id));
        cursor = meta.pagination.next_cursor;
        expect(meta.pagination.has_more).toBe(cursor !== null);
        pages += 1;
      } while (cursor);
      expect(pages).toBe(3);
      expect(seen).toEqual([...created].reverse());
    });

    it('shows each contact exactly as GET /contacts/{id} does (the list is built as JSON by PostgreSQL)', async () => {
      const { createOrgWithKey } = await import('../support/factories.ts');
      const { apiClient } = await import('../support/http.ts');
      const own = await createOrgWithKey(h.stack.orm, { scopes: ['all'], rateLimitPerMinute: 100_000, burst: 10_000 });
      const request = apiClient(h.api.url, own.key);
      const bodies = [
        { email: 'plain@example.com' },
        {
          email: 'rich@example.com',
          first_name: 'Zoë "Q" \\ O\'Brien',
          last_name: '李 😀',
          company: 'Tab\there & new\nline',
          tags: ['a "quoted" tag', 'ünïcode', 'emoji 🎉'],
          custom_fields: {
            plan: 'pro',
            seats: 12,
            ratio: 0.25,
            big: 12345678901,
            nested: { list: [1, 'two', null, true], empty: {} },
            flag: false,
            nothing: null,
          },
        },
      ];
      const ids: string[] = [];
      for (const body of bodies)
        ids.push(((await request('POST', '/api/v1/contacts', { headers: idem(), body })).body.data as { _id: string })._id);
      // A contact changed after its creation: updatedAt differs from createdAt.
      expect((await request('PATCH', `/api/v1/contacts/${ids[0]}`, { headers: idem(), body: { last_name: 'Later' } })).status).toBe(200);
      const list = await request('GET', '/api/v1/contacts?limit=10');
      expect(list.status).toBe(200);
      const listed = list.body.data as { _id: string }[];
      expect(listed.map((c) => c._id)).toEqual([...ids].reverse());
      for (const item of listed) {
        const one = await request('GET', `/api/v1/contacts/${item._id}`);
        expect(item).toEqual(one.body.data);
      }
      expect(list.body.meta).toMatchObject({
        request_id: expect.any(String),
        pagination: { limit: 10, has_more: false, next_cursor: null },
      });
    });

    it('answers an empty page for a workspace without contacts', async () => {
      const { createOrgWithKey } = await import('../support/factories.ts');
      const { apiClient } = await import('../support/http.ts');
      const own = await createOrgWithKey(h.stack.orm, { scopes: ['all'], rateLimitPerMinute: 100_000, burst: 10_000 });
      const response = await apiClient(h.api.url, own.key)('GET', '/api/v1/contacts');
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual([]);
      expect((response.body.meta as { pagination: unknown }).pagination).toEqual({ limit: 50, has_more: false, next_cursor: null });
    });

    it('defaults to 50 per page', async () => {
      const response = await h.request('GET', '/api/v1/contacts');
      expect((response.body.meta as { pagination: { limit: number } }).pagination.limit).toBe(50);
    });

    it.each(['0', '101', '-1', '1.5', 'ten', ''])('answers 400 for limit=%s', async (limit) => {
      const response = await h.request('GET', `/api/v1/contacts?limit=${limit}`);
      expectError(response, 400, 'invalid_request');
    });

    it.each(['1', '100'])('accepts limit=%s', async (limit) => {
      expect((await h.request('GET', `/api/v1/contacts?limit=${limit}`)).status).toBe(200);
    });

    it("refuses a tampered cursor, a garbage cursor and another workspace's cursor", async () => {
      for (let i = 0; i < 2; i += 1) {
        await h.request('POST', '/api/v1/contacts', { headers: idem(), body: { email: `cur${i}@example.com` } });
      }
      const first = await h.request('GET', '/api/v1/contacts?limit=1');
      const cursor = (first.body.meta as { pagination: { next_cursor: string } }).pagination.next_cursor;
      const [payload, signature] = cursor.split('.');
      const forged = Buffer.from(JSON.stringify(['2000-01-01T00:00:00.000Z', 'f'.repeat(24)])).toString('base64url');
      for (const bad of [`${forged}.${signature}`, 'garbage', `${payload}.`, `${cursor}.x`]) {
        const response = await h.request('GET', `/api/v1/contacts?cursor=${encodeURIComponent(bad)}`);
        expectError(response, 400, 'invalid_request');
      }
      const { createOrgWithKey } = await import('../support/factories.ts');
      const other = await createOrgWithKey(h.stack.orm, { scopes: ['all'] });
      const response = await h.request('GET', `/api/v1/contacts?cursor=${encodeURIComponent(cursor)}`, { key: other.key });
      expectError(response, 400, 'invalid_request');
    });
  });
});
