import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Segment } from '../../db/entities/index.ts';
import { ALL_TENANTS } from '../../db/orm.ts';
import { createFsBlobStore } from '../../src/blob/fs-blob-store.ts';
import { isStale, storedCountOf } from '../../src/modules/segments/segment-counts.ts';
import { createSegmentsService } from '../../src/modules/segments/segments.service.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient, type ApiResponse } from '../support/http.ts';
import { runContactImport } from '../support/contact-imports.ts';

const dataOf = <T>(response: ApiResponse, status = 200): T => {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  return response.body.data as T;
};

/**
 * Stored member counts (segments.member_count): exact for static segments through every way
 * members are written (the API's adds and removes, an import, a contact's deletion, concurrent
 * writers), and a dynamic segment's last full count with its time.
 */
describe('stored segment member counts', () => {
  let h: ApiHarness;
  const blobDir = mkdtempSync(join(tmpdir(), 'herald-segment-counts-'));

  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(async () => {
    await h?.close();
    rmSync(blobDir, { recursive: true, force: true });
  });

  async function workspace() {
    const ws = await createOrgWithKey(h.stack.orm, { scopes: ['all'], rateLimitPerMinute: 100_000, burst: 10_000 });
    const request = apiClient(h.api.url, ws.key);
    const post = (path: string, body: unknown) => request('POST', `/api/v1${path}`, { body, headers: idem() });
    return {
      orgId: ws.org.id,
      request,
      post,
      contact: async (email: string, tags: string[] = []) => dataOf<{ _id: string }>(await post('/contacts', { email, tags }), 201)._id,
    };
  }

  /** The stored count, the rows of segment_members and the API's contactCount of one segment. */
  async function countsOf(ws: Awaited<ReturnType<typeof workspace>>, segmentId: string) {
    const em = h.stack.orm.em.fork();
    const segment = await em.findOneOrFail(Segment, { id: segmentId }, ALL_TENANTS);
    const [row] = await em.execute<{ n: string }[]>('select count(*) as n from segment_members where segment_id = ?', [segmentId]);
    const listed = dataOf<{ _id: string; contactCount: number }[]>(await ws.request('GET', '/api/v1/segments?limit=100')).find(
      (s) => s._id === segmentId,
    );
    return { stored: segment.memberCount, rows: Number(row?.n), api: listed?.contactCount };
  }

  async function runImport(orgId: string, segmentId: string, csv: string) {
    const { ran } = await runContactImport({ orm: h.stack.orm, blobs: createFsBlobStore(blobDir), orgId, csv, segmentId });
    return ran;
  }

  it("keeps a static segment's count exact through adds, removes, an import and a contact's deletion", async () => {
    const ws = await workspace();
    const segmentId = dataOf<{ _id: string }>(await ws.post('/segments', { name: 'Hand-picked', type: 'static' }), 201)._id;
    expect(await countsOf(ws, segmentId)).toEqual({ stored: 0, rows: 0, api: 0 });
    const ada = await ws.contact('ada@example.com');
    await ws.contact('grace@example.com');
    await ws.contact('alan@example.com');

    dataOf(await ws.post(`/segments/${segmentId}/contacts`, { emails: ['ada@example.com', 'grace@example.com'] }));
    expect(await countsOf(ws, segmentId)).toEqual({ stored: 2, rows: 2, api: 2 });
    // Members already in it, and a contact that does not exist: nothing changes.
    dataOf(await ws.post(`/segments/${segmentId}/contacts`, { emails: ['ada@example.com', 'nobody@example.com'] }));
    expect(await countsOf(ws, segmentId)).toEqual({ stored: 2, rows: 2, api: 2 });
    dataOf(await ws.post(`/segments/${segmentId}/contacts/remove`, { emails: ['grace@example.com', 'alan@example.com'] }));
    expect(await countsOf(ws, segmentId)).toEqual({ stored: 1, rows: 1, api: 1 });

    // An import into the segment: two new contacts, one existing member, one existing non-member, one bad row.
    const imported = await runImport(
      ws.orgId,
      segmentId,
      'email\nnew1@example.com\nnew2@example.com\nada@example.com\nalan@example.com\nnot-an-address\n',
    );
    expect(imported).toMatchObject({ status: 'completed', created: 2, skipped: 1 });
    expect(await countsOf(ws, segmentId)).toEqual({ stored: 4, rows: 4, api: 4 });

    dataOf(await ws.request('DELETE', `/api/v1/contacts/${ada}`, { headers: idem() }));
    expect(await countsOf(ws, segmentId)).toEqual({ stored: 3, rows: 3, api: 3 });
  });

  it('stays exact when many writers add and remove members of the same segments at once', async () => {
    const ws = await workspace();
    const first = dataOf<{ _id: string }>(await ws.post('/segments', { name: 'First', type: 'static' }), 201)._id;
    const second = dataOf<{ _id: string }>(await ws.post('/segments', { name: 'Second', type: 'static' }), 201)._id;
    const emails = Array.from({ length: 40 }, (_, i) => `p${i}@example.com`);
    for (const email of emails) await ws.contact(email);

    // Overlapping API adds of 10 addresses each (many already members when they run), to both segments at once.
    const adds = Array.from({ length: 12 }, (_, i) => emails.slice((i * 3) % 30, ((i * 3) % 30) + 10));
    const responses = await Promise.all(
      adds.flatMap((batch) => [first, second].map((id) => ws.post(`/segments/${id}/contacts`, { emails: batch }))),
    );
    for (const response of responses) expect(response.status, JSON.stringify(response.body)).toBe(200);

    // Writers that take no segment lock (as automation steps and imports write): one transaction per
    // contact, each adding it to both segments in one statement, and removing others, all at once.
    const conn = () => h.stack.orm.em.fork();
    const ids = await conn().execute<{ id: string; email: string }[]>('select id, email from contacts where org_id = ? order by email', [
      ws.orgId,
    ]);
    await Promise.all(
      ids.map((contact, i) =>
        conn().transactional(async (tx) => {
          if (i % 4 === 0) {
            await tx.execute('delete from segment_members where contact_id = ? and segment_id = any(?::text[])', [
              contact.id,
              `{${first},${second}}`,
            ]);
          } else {
            await tx.execute(
              `insert into segment_members (segment_id, contact_id, org_id, created_at)
               select s, ?, ?, now() from unnest(?::text[]) as s on conflict do nothing`,
              [contact.id, ws.orgId, i % 2 ? `{${first},${second}}` : `{${second},${first}}`],
            );
          }
        }),
      ),
    );
    for (const id of [first, second]) {
      const counts = await countsOf(ws, id);
      expect(counts.stored).toBe(counts.rows);
      expect(counts.api).toBe(counts.rows);
      expect(counts.rows).toBe(30);
    }
  });

  it("stores a dynamic segment's count when it is created, and a recount when asked, with the time of each", async () => {
    const ws = await workspace();
    await ws.contact('a@example.com', ['vip']);
    await ws.contact('b@example.com', ['vip', 'eu']);
    await ws.contact('c@example.com');
    const vip = dataOf<{ _id: string; contactCount: number }>(await ws.post('/segments', { name: 'VIP', tags: ['vip'] }), 201);
    expect(vip.contactCount).toBe(2);
    const em = () => h.stack.orm.em.fork();
    const stored = await em().findOneOrFail(Segment, { id: vip._id }, ALL_TENANTS);
    expect(storedCountOf(stored)).toMatchObject({ count: 2, exact: false });
    const firstCount = stored.countedAt!;

    await ws.contact('d@example.com', ['vip']);
    // The API counts live; the stored estimate moves only with a recount.
    const listed = dataOf<{ _id: string; contactCount: number }[]>(await ws.request('GET', '/api/v1/segments'));
    expect(listed.find((s) => s._id === vip._id)?.contactCount).toBe(3);
    expect((await em().findOneOrFail(Segment, { id: vip._id }, ALL_TENANTS)).memberCount).toBe(2);
    await createSegmentsService({ orm: h.stack.orm }).refreshStoredCounts(ws.orgId, [vip._id]);
    const recounted = await em().findOneOrFail(Segment, { id: vip._id }, ALL_TENANTS);
    expect(recounted.memberCount).toBe(3);
    expect(recounted.countedAt!.getTime()).toBeGreaterThanOrEqual(firstCount.getTime());
    expect(recounted.updatedAt.getTime()).toBe(stored.updatedAt.getTime());
  });

  it('calls a dynamic count stale when missing or older than a minute, and a static one never', () => {
    const now = new Date('2026-11-28T12:00:00Z');
    expect(isStale({ type: 'tag', countedAt: null }, now)).toBe(true);
    expect(isStale({ type: 'all', countedAt: new Date('2026-11-28T11:59:00Z') }, now)).toBe(true);
    expect(isStale({ type: 'tag', countedAt: new Date('2026-11-28T11:59:01Z') }, now)).toBe(false);
    expect(isStale({ type: 'static', countedAt: null }, now)).toBe(false);
  });
});
