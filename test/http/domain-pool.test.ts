import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { csrfOf, signedInPerson } from '../support/dashboard-client.ts';
import { expectError } from '../support/http.ts';
import { unique } from '../support/factories.ts';
import { addSendingDomain } from '../support/sending.ts';

type DomainOption = { _id: string; ip_pool: string | null };

describe('PATCH /api/v1/domains/:id (egress IP pool, Herald extension)', () => {
  let h: ApiHarness;
  const patch = (id: string, body: unknown) => h.request('PATCH', `/api/v1/domains/${id}`, { body, headers: idem() });
  const listed = async (id: string) =>
    ((await h.request('GET', '/api/v1/domains')).body.data as DomainOption[]).find((option) => option._id === id);

  beforeAll(async () => {
    h = await startApiHarness({ EGRESS_POOLS: 'bulk=127.0.0.2,127.0.0.3;tx=127.0.0.4' });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('sets and clears the pool, which GET /domains shows', async () => {
    const domain = await addSendingDomain(h.stack.orm, h.workspace.org.id);
    expect((await listed(domain.id))?.ip_pool).toBeNull();
    const set = await patch(domain.id, { ip_pool: 'bulk' });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.data).toEqual({ _id: domain.id, domain: domain.domain, ip_pool: 'bulk' });
    expect((await listed(domain.id))?.ip_pool).toBe('bulk');
    const cleared = await patch(domain.id, { ip_pool: null });
    expect(cleared.status, JSON.stringify(cleared.body)).toBe(200);
    expect((await listed(domain.id))?.ip_pool).toBeNull();
  });

  it.each([
    ['an unknown pool', { ip_pool: 'mass' }, 'ip_pool'],
    ['a name that cannot be a pool', { ip_pool: 'Not A Pool' }, 'ip_pool'],
    ['a number', { ip_pool: 7 }, 'ip_pool'],
    ['an unknown field', { ip_pool: 'bulk', pool: 'bulk' }, 'pool'],
    ['no ip_pool', {}, 'ip_pool'],
  ])('answers 400 invalid_request for %s, naming the field', async (_label, body, path) => {
    const domain = await addSendingDomain(h.stack.orm, h.workspace.org.id);
    const response = await patch(domain.id, body);
    expectError(response, 400, 'invalid_request');
    const fields = (response.body.error?.details as { fields?: { path: string }[] } | undefined)?.fields ?? [];
    expect(
      fields.map((f) => f.path),
      JSON.stringify(response.body),
    ).toContain(path);
    expect((await listed(domain.id))?.ip_pool).toBeNull();
  });

  it('names the pools the server has when the pool is unknown', async () => {
    const domain = await addSendingDomain(h.stack.orm, h.workspace.org.id);
    const response = await patch(domain.id, { ip_pool: 'mass' });
    expect(response.body.error?.details).toMatchObject({ reason: 'UNKNOWN_IP_POOL' });
    expect(response.body.error?.message).toContain('pools: bulk, tx');
  });

  it("picks the pool on the dashboard's domain page", async () => {
    const domain = await addSendingDomain(h.stack.orm, h.workspace.org.id);
    const { client } = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, {
      email: `${unique('p').toLowerCase()}@example.com`,
    });
    const page = await client.get(`/dashboard/domains/${domain.id}`);
    const { text } = page;
    expect(text).toContain('Egress IP pool');
    expect(text).toContain('<option value="tx">tx</option>');
    const saved = await client.post(`/dashboard/domains/${domain.id}/ip-pool`, { _csrf: csrfOf(text), ip_pool: 'tx' });
    expect(saved.status).toBe(303);
    expect((await listed(domain.id))?.ip_pool).toBe('tx');
    const refused = await client.post(`/dashboard/domains/${domain.id}/ip-pool`, { _csrf: csrfOf(text), ip_pool: 'mass' });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('no egress IP pool');
    expect((await listed(domain.id))?.ip_pool).toBe('tx');
  });
});
