import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MEMBERSHIP_LIMITS } from '../../src/modules/segments/segments.fns.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient, expectError, fieldsOf, type ApiResponse } from '../support/http.ts';

type Segment = { _id: string; type: string; contactCount: number; updatedAt: string };
type Contact = { _id: string; email: string };

const dataOf = <T>(response: ApiResponse, status = 200): T => {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  return response.body.data as T;
};

describe('segment membership (static segments)', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(async () => h?.close());

  async function workspace(scopes = ['all']) {
    const ws = await createOrgWithKey(h.stack.orm, { scopes, rateLimitPerMinute: 100_000, burst: 10_000 });
    const request = apiClient(h.api.url, ws.key);
    const post = (path: string, body: unknown) => request('POST', `/api/v1${path}`, { body, headers: idem() });
    return {
      request,
      post,
      segment: async (body: Record<string, unknown> = { type: 'static' }) =>
        dataOf<Segment>(await post('/segments', { name: 'VIPs', ...body }), 201),
      contact: async (email: string, tags: string[] = []) => dataOf<Contact>(await post('/contacts', { email, tags }), 201),
      members: async (id: string, query = '') =>
        dataOf<Contact[]>(await request('GET', `/api/v1/segments/${id}/contacts${query}`)).map((c) => c.email),
    };
  }

  it('creates a static segment, adds contacts by id and address, reports what it did not find, and lists them', async () => {
    const ws = await workspace();
    const segment = await ws.segment();
    expect(segment).toMatchObject({ type: 'static', contactCount: 0 });
    const ada = await ws.contact('ada@example.com');
    await ws.contact('Grace@Example.com');
    await ws.contact('outside@example.com');

    const added = dataOf<Record<string, unknown>>(
      await ws.post(`/segments/${segment._id}/contacts`, {
        contact_ids: [ada._id, '0123456789abcdef01234567'],
        emails: ['Grace@EXAMPLE.com', 'ada@example.com', 'nobody@example.com'],
      }),
    );
    expect(added).toEqual({
      segmentId: segment._id,
      added: 2,
      alreadyMembers: 0,
      notFound: { contactIds: ['0123456789abcdef01234567'], emails: ['nobody@example.com'] },
      contactCount: 2,
    });
    expect((await ws.members(segment._id)).sort()).toEqual(['Grace@example.com', 'ada@example.com'].sort());
    const listed = dataOf<Segment[]>(await ws.request('GET', '/api/v1/segments')).find((s) => s._id === segment._id);
    expect(listed).toMatchObject({ contactCount: 2 });
    expect(Date.parse(listed!.updatedAt)).toBeGreaterThanOrEqual(Date.parse(segment.updatedAt));

    const again = dataOf<Record<string, unknown>>(await ws.post(`/segments/${segment._id}/contacts`, { emails: ['ada@example.com'] }));
    expect(again).toMatchObject({ added: 0, alreadyMembers: 1, contactCount: 2 });
  });

  it('removes contacts (not the contacts themselves), and a deleted contact leaves its segments', async () => {
    const ws = await workspace();
    const segment = await ws.segment();
    const a = await ws.contact('a@example.com');
    const b = await ws.contact('b@example.com');
    const c = await ws.contact('c@example.com');
    await ws.post(`/segments/${segment._id}/contacts`, { contact_ids: [a._id, b._id, c._id] });
    const removed = dataOf<Record<string, unknown>>(
      await ws.post(`/segments/${segment._id}/contacts/remove`, { emails: ['a@example.com', 'x@example.com'], contact_ids: [a._id] }),
    );
    expect(removed).toEqual({
      segmentId: segment._id,
      removed: 1,
      notMembers: 0,
      notFound: { contactIds: [], emails: ['x@example.com'] },
      contactCount: 2,
    });
    expect(dataOf<Contact>(await ws.request('GET', `/api/v1/contacts/${a._id}`)).email).toBe('a@example.com');
    expect(
      dataOf<Record<string, unknown>>(await ws.post(`/segments/${segment._id}/contacts/remove`, { contact_ids: [a._id] })),
    ).toMatchObject({ removed: 0, notMembers: 1 });

    expect((await ws.request('DELETE', `/api/v1/contacts/${b._id}`, { headers: idem() })).status).toBe(200);
    expect(await ws.members(segment._id)).toEqual(['c@example.com']);
    expect(dataOf<Segment[]>(await ws.request('GET', '/api/v1/segments')).find((s) => s._id === segment._id)).toMatchObject({
      contactCount: 1,
    });
  });

  it('lists the members of tag and all segments too, page by page, and refuses to change them (409 SEGMENT_NOT_STATIC)', async () => {
    const ws = await workspace();
    for (let i = 0; i < 5; i += 1) await ws.contact(`tagged${i}@example.com`, ['vip']);
    await ws.contact('plain@example.com');
    const tagged = await ws.segment({ tags: ['vip'] });
    const everyone = await ws.segment({});
    expect(everyone.type).toBe('all');
    const walked: string[] = [];
    let cursor: string | null = null;
    do {
      const response: ApiResponse = await ws.request(
        'GET',
        `/api/v1/segments/${tagged._id}/contacts?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      walked.push(...dataOf<Contact[]>(response).map((c) => c.email));
      cursor = (response.body.meta as { pagination: { next_cursor: string | null } }).pagination.next_cursor;
    } while (cursor);
    expect(walked.sort()).toEqual(['tagged0', 'tagged1', 'tagged2', 'tagged3', 'tagged4'].map((n) => `${n}@example.com`));
    expect(await ws.members(everyone._id)).toHaveLength(6);
    const refused = await ws.post(`/segments/${tagged._id}/contacts`, { emails: ['plain@example.com'] });
    expectError(refused, 409, 'conflict');
    expect(refused.body.error?.details).toMatchObject({ reason: 'SEGMENT_NOT_STATIC' });
    // A cursor belongs to its segment.
    const first = await ws.request('GET', `/api/v1/segments/${tagged._id}/contacts?limit=2`);
    const foreign = (first.body.meta as { pagination: { next_cursor: string } }).pagination.next_cursor;
    expectError(await ws.request('GET', `/api/v1/segments/${everyone._id}/contacts?cursor=${foreign}`), 400, 'invalid_request');
  });

  it(`takes ${MEMBERSHIP_LIMITS.perRequest} contacts in one request and refuses one more, and an empty or mixed-up body`, async () => {
    const ws = await workspace();
    const segment = await ws.segment();
    const emails = Array.from({ length: MEMBERSHIP_LIMITS.perRequest }, (_, i) => `n${i}@example.com`);
    expect(dataOf<Record<string, unknown>>(await ws.post(`/segments/${segment._id}/contacts`, { emails }))).toMatchObject({
      added: 0,
      contactCount: 0,
    });
    const over = await ws.post(`/segments/${segment._id}/contacts`, { emails: [...emails, 'one@example.com'] });
    expectError(over, 400, 'invalid_request');
    // The body's JSON bounds refuse the 1,001st item before validation, with the same limit.
    expect(over.body.error?.details).toMatchObject({ reason: 'JSON_TOO_MANY_ITEMS', limit: MEMBERSHIP_LIMITS.perRequest });
    const split = await ws.post(`/segments/${segment._id}/contacts`, {
      emails: emails.slice(1),
      contact_ids: ['0123456789abcdef01234567', '0123456789abcdef01234568'],
    });
    expectError(split, 400, 'invalid_request');
    expect(fieldsOf(split).map((f) => f.path)).toEqual(['contact_ids']);
    expectError(await ws.post(`/segments/${segment._id}/contacts`, {}), 400, 'invalid_request');
    expectError(await ws.post(`/segments/${segment._id}/contacts`, { emails: ['not-an-address'] }), 400, 'invalid_request');
    expectError(await ws.post(`/segments/${segment._id}/contacts`, { contact_ids: ['xyz'] }), 400, 'invalid_request');
    expectError(await ws.post('/segments', { name: 'Both', type: 'static', tags: ['vip'] }), 400, 'invalid_request');
    expectError(await ws.post('/segments', { name: 'Other', type: 'tag' }), 400, 'invalid_request');
  });

  it("answers 404 for another workspace's segment and 403 without segments:write", async () => {
    const ws = await workspace();
    const other = await workspace();
    const theirs = await other.segment();
    expectError(await ws.post(`/segments/${theirs._id}/contacts`, { emails: ['a@example.com'] }), 404, 'not_found');
    expectError(await ws.request('GET', `/api/v1/segments/${theirs._id}/contacts`), 404, 'not_found');
    const reader = await workspace(['segments:read']);
    const readable = await other.segment();
    expectError(await reader.post(`/segments/${readable._id}/contacts`, { emails: ['a@example.com'] }), 403, 'missing_scope');
  });
});
