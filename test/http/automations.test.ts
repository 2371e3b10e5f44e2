import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTOMATION_STATUSES, type AutomationStatus } from '../../db/entities/index.ts';
import { createAutomationsAdmin } from '../../src/modules/automations/automations.admin.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { EXIT_ONLY_DEFINITION, insertStatShard } from '../support/automation-rows.ts';
import { createOrgWithKey, unique } from '../support/factories.ts';
import { apiClient, expectError, type ApiResponse } from '../support/http.ts';

interface AutomationBody {
  _id: string;
  name: string;
  description: string;
  status: AutomationStatus;
  trigger_type: string;
  stats: Record<string, number>;
  version: number;
  created_at: string;
  updated_at: string;
}

const data = (response: ApiResponse) => response.body.data as AutomationBody;

function expectStatus(response: ApiResponse, status: number): void {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
}

describe('automations', () => {
  let h: ApiHarness;
  let admin: ReturnType<typeof createAutomationsAdmin>;

  /** An automation of the harness workspace (or `orgId`), created as an operator would. */
  async function createAutomation(status: AutomationStatus = 'draft', orgId?: string): Promise<string> {
    const automation = await admin.createAutomation({
      orgId: orgId ?? h.workspace.org.id,
      name: unique('Welcome series'),
      definition: EXIT_ONLY_DEFINITION,
      status,
    });
    return automation.id;
  }

  const patch = (id: string, body: unknown) => h.request('PATCH', `/api/v1/automations/${id}`, { headers: idem(), body });
  const remove = (id: string) => h.request('DELETE', `/api/v1/automations/${id}`, { headers: idem() });
  const get = (id: string) => h.request('GET', `/api/v1/automations/${id}`);

  beforeAll(async () => {
    h = await startApiHarness();
    admin = createAutomationsAdmin({ orm: h.stack.orm });
  });
  afterAll(() => h.close());

  describe('GET /api/v1/automations/{id}', () => {
    it('returns exactly the spec fields, snake_case, with camelCase stats', async () => {
      const id = await createAutomation('active');
      const response = await get(id);
      expectStatus(response, 200);
      expect(response.body.data).toStrictEqual({
        _id: id,
        name: expect.stringMatching(/^Welcome series/),
        description: '',
        status: 'active',
        trigger_type: 'contact.created',
        stats: { totalRuns: 0, activeRuns: 0, completedRuns: 0, failedRuns: 0, emailsSent: 0, creditsUsed: 0 },
        version: 1,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
        updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      });
    });

    it('answers the six counters summed over their shards, not the legacy stats column', async () => {
      const id = await createAutomation();
      await h.stack.orm.em.fork().execute(`update automations set stats = '{"totalRuns": 999}' where id = ?`, [id]);
      await insertStatShard(h.stack.orm, h.workspace.org.id, id, 0, { total_runs: 5, active_runs: 2, emails_sent: 7, credits_used: 7 });
      await insertStatShard(h.stack.orm, h.workspace.org.id, id, 3, { total_runs: 4, active_runs: -1, completed_runs: 2, failed_runs: 1 });
      await insertStatShard(h.stack.orm, h.workspace.org.id, id, 7, { emails_sent: 1, credits_used: 1 });
      const expected = { totalRuns: 9, activeRuns: 1, completedRuns: 2, failedRuns: 1, emailsSent: 8, creditsUsed: 8 };
      expect(data(await get(id)).stats).toStrictEqual(expected);
      const list = await h.request('GET', '/api/v1/automations?limit=100');
      expect((list.body.data as AutomationBody[]).find((a) => a._id === id)!.stats).toStrictEqual(expected);
      expect(data(await patch(id, { name: 'Counted' })).stats).toStrictEqual(expected);
    });

    it("answers 400 for a malformed id, 404 for an unknown id and for another workspace's automation", async () => {
      expectError(await get('not-an-id'), 400, 'invalid_request');
      expectError(await get('f'.repeat(24)), 404, 'not_found');
      const other = await createOrgWithKey(h.stack.orm);
      const foreign = await createAutomation('active', other.org.id);
      expectError(await get(foreign), 404, 'not_found');
      expectError(await patch(foreign, { name: 'Mine now' }), 404, 'not_found');
      expectError(await remove(foreign), 404, 'not_found');
      const untouched = await apiClient(h.api.url, other.key)('GET', `/api/v1/automations/${foreign}`);
      expect(data(untouched)).toMatchObject({ status: 'active', version: 1 });
    });
  });

  describe('GET /api/v1/automations', () => {
    it("lists the workspace's automations newest first, archived included, page by page", async () => {
      const own = await createOrgWithKey(h.stack.orm, { scopes: ['all'], rateLimitPerMinute: 100_000, burst: 10_000 });
      const request = apiClient(h.api.url, own.key);
      const created: string[] = [];
      for (const status of ['draft', 'active', 'paused', 'archived', 'draft'] as const) {
        created.push(await createAutomation(status, own.org.id));
      }
      await createAutomation('draft');
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const query: string = `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const response = await request('GET', `/api/v1/automations${query}`);
        expectStatus(response, 200);
        const page = response.body.data as AutomationBody[];
        for (const item of page)
          expect(Object.keys(item).sort()).toEqual([
            '_id',
            'created_at',
            'description',
            'name',
            'stats',
            'status',
            'trigger_type',
            'updated_at',
            'version',
          ]);
        seen.push(...page.map((a) => a._id));
        cursor = (response.body.meta as { pagination: { next_cursor: string | null } }).pagination.next_cursor;
      } while (cursor);
      expect(seen).toEqual([...created].reverse());
    });

    it.each(['0', '101', 'x'])('answers 400 for limit=%s', async (limit) => {
      expectError(await h.request('GET', `/api/v1/automations?limit=${limit}`), 400, 'invalid_request');
    });

    it.each(['1', '100'])('accepts limit=%s', async (limit) => {
      expectStatus(await h.request('GET', `/api/v1/automations?limit=${limit}`), 200);
    });
  });

  describe('PATCH /api/v1/automations/{id}', () => {
    it('renames and describes, raising version by one on every change', async () => {
      const id = await createAutomation();
      const before = data(await get(id));
      const renamed = await patch(id, { name: '  Onboarding  ' });
      expectStatus(renamed, 200);
      expect(data(renamed)).toMatchObject({ _id: id, name: 'Onboarding', version: 2, status: 'draft' });
      expect(Date.parse(data(renamed).updated_at)).toBeGreaterThanOrEqual(Date.parse(before.updated_at));
      expect(data(renamed).created_at).toBe(before.created_at);

      const described = await patch(id, { description: 'Three emails over a week' });
      expect(data(described)).toMatchObject({ name: 'Onboarding', description: 'Three emails over a week', version: 3 });

      const all = await patch(id, { name: 'Onboarding v2', description: '', status: 'active' });
      expect(data(all)).toMatchObject({ name: 'Onboarding v2', description: '', status: 'active', version: 4 });
      expect(data(await get(id))).toStrictEqual(data(all));
    });

    it('leaves the version alone when nothing changes (empty body, same values, same status)', async () => {
      const id = await createAutomation('active');
      await patch(id, { name: 'Same', description: 'Same' });
      const base = data(await get(id));
      expect(base.version).toBe(2);
      for (const body of [{}, { name: 'Same' }, { description: 'Same' }, { status: 'active' }, { name: 'Same', status: 'active' }]) {
        const response = await patch(id, body);
        expectStatus(response, 200);
        expect(data(response).version, JSON.stringify(body)).toBe(2);
      }
    });

    it.each([
      [{ name: '' }, 'name', 'min_length'],
      [{ name: '   ' }, 'name', 'min_length'],
      [{ name: 'x'.repeat(121) }, 'name', 'max_length'],
      [{ name: 42 }, 'name', 'string'],
      [{ name: null }, 'name', 'string'],
      [{ description: 'x'.repeat(2001) }, 'description', 'max_length'],
      [{ description: 7 }, 'description', 'string'],
      [{ status: 'deleted' }, 'status', 'picklist'],
      [{ status: 'Active' }, 'status', 'picklist'],
      [{ status: null }, 'status', 'picklist'],
      [{ trigger_type: 'email.opened' }, 'trigger_type', 'unknown_field'],
      [{ version: 9 }, 'version', 'unknown_field'],
      [{ stats: {} }, 'stats', 'unknown_field'],
    ])('answers 400 invalid_request for %j naming field %s', async (body, path, type) => {
      const id = await createAutomation();
      const response = await patch(id, body);
      expectError(response, 400, 'invalid_request');
      const fields = (response.body.error?.details as { fields: { path: string; type: string; location: string }[] }).fields;
      expect(fields, JSON.stringify(fields)).toContainEqual(expect.objectContaining({ path, type, location: 'body' }));
      expect(data(await get(id)).version).toBe(1);
    });

    it('answers 400 for a body that is not an object', async () => {
      const id = await createAutomation();
      expectError(await patch(id, ['name']), 400, 'invalid_request');
      expectError(await patch(id, 'name'), 400, 'invalid_request');
    });

    it.each([
      ['name', 'n'],
      ['name', 'n'.repeat(120)],
      ['description', ''],
      ['description', 'd'.repeat(2000)],
    ])('accepts %s at its bound (length %#)', async (field, value) => {
      const id = await createAutomation();
      if (field === 'description') await patch(id, { description: 'something else' });
      const response = await patch(id, { [field]: value });
      expectStatus(response, 200);
      expect(data(response)[field as 'name' | 'description']).toBe(value);
    });

    it('answers 404 for an unknown id and 400 for a malformed one', async () => {
      expectError(await patch('0'.repeat(24), { name: 'x' }), 404, 'not_found');
      expectError(await patch('zz', { name: 'x' }), 400, 'invalid_request');
    });
  });

  describe('status transitions', () => {
    const pairs = AUTOMATION_STATUSES.flatMap((from) => AUTOMATION_STATUSES.filter((to) => to !== from).map((to) => [from, to] as const));

    // The spec's lifecycle table: PATCH with a status moves an automation to the given state, from any of the four.
    it.each(pairs)('moves %s → %s with the other fields of the same request', async (from, to) => {
      const id = await createAutomation(from);
      const response = await patch(id, { status: to, name: `Moved to ${to}` });
      expectStatus(response, 200);
      expect(data(response)).toMatchObject({ status: to, name: `Moved to ${to}`, version: 2 });
      expect(data(await get(id))).toMatchObject({ status: to, version: 2 });
    });

    it.each(AUTOMATION_STATUSES.map((s) => [s]))('treats %s → the same status as no change', async (status) => {
      const id = await createAutomation(status);
      const response = await patch(id, { status });
      expectStatus(response, 200);
      expect(data(response)).toMatchObject({ status, version: 1 });
    });

    it('walks a whole life: draft → active → paused → active → archived → draft, one version each', async () => {
      const id = await createAutomation();
      const path: AutomationStatus[] = ['active', 'paused', 'active', 'archived', 'draft'];
      for (const [i, status] of path.entries()) {
        const response = await patch(id, { status });
        expect(data(response)).toMatchObject({ status, version: i + 2 });
      }
    });

    it('serialises concurrent changes: each one gets its own version', async () => {
      const id = await createAutomation();
      const responses = await Promise.all(Array.from({ length: 6 }, (_, i) => patch(id, { name: `Concurrent ${i}` })));
      for (const response of responses) expectStatus(response, 200);
      expect(responses.map((r) => data(r).version).sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 7]);
      expect(data(await get(id)).version).toBe(7);
    });
  });

  describe('DELETE /api/v1/automations/{id}', () => {
    it.each([['draft'], ['active'], ['paused']] as const)('archives a %s automation and answers the delete envelope', async (status) => {
      const id = await createAutomation(status);
      const response = await remove(id);
      expectStatus(response, 200);
      expect(response.body.data).toStrictEqual({ _id: id, deleted: true, archived: true });
      const after = data(await get(id));
      expect(after).toMatchObject({ status: 'archived', version: 2 });
    });

    it('answers 200 again for an automation already archived, without another change', async () => {
      const id = await createAutomation('active');
      expectStatus(await remove(id), 200);
      const first = data(await get(id));
      const second = await remove(id);
      expectStatus(second, 200);
      expect(second.body.data).toStrictEqual({ _id: id, deleted: true, archived: true });
      expect(data(await get(id))).toStrictEqual(first);
      expect(first.version).toBe(2);
    });

    it('keeps the archived automation in the list, and PATCH with a status brings it back', async () => {
      const id = await createAutomation('active');
      await remove(id);
      const list = await h.request('GET', '/api/v1/automations?limit=100');
      expect((list.body.data as AutomationBody[]).find((a) => a._id === id)).toMatchObject({ status: 'archived' });
      expect(data(await patch(id, { status: 'active' }))).toMatchObject({ status: 'active', version: 3 });
    });

    it('still lets an archived automation be renamed and described (status unchanged)', async () => {
      const id = await createAutomation('archived');
      const response = await patch(id, { name: 'Old campaign (2025)', description: 'kept for its stats' });
      expectStatus(response, 200);
      expect(data(response)).toMatchObject({ status: 'archived', name: 'Old campaign (2025)', version: 2 });
    });

    it('replays the stored answer for the same Idempotency-Key', async () => {
      const id = await createAutomation();
      const headers = idem();
      const first = await h.request('DELETE', `/api/v1/automations/${id}`, { headers });
      const replay = await h.request('DELETE', `/api/v1/automations/${id}`, { headers });
      expectStatus(replay, 200);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body).toEqual(first.body);
    });

    it('answers 404 for an unknown id and 400 for a malformed one', async () => {
      expectError(await remove('0'.repeat(24)), 404, 'not_found');
      expectError(await remove('123'), 400, 'invalid_request');
    });
  });
});
