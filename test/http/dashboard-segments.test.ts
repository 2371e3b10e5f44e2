import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact, Segment, SegmentMember } from '../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { dashboardClient, signedInPerson } from '../support/dashboard-client.ts';
import { createOrg, unique } from '../support/factories.ts';

const escaped = (text: string) => text.replace(/["&'<=>]/g, (c) => `&#${c.charCodeAt(0)};`);

/** The dashboard's segments pages: list with counts, create and edit with the rule's live count, members, static membership. */
describe('the dashboard: segments', () => {
  let h: ApiHarness;
  const person = () => `${unique('person').toLowerCase()}@example.com`;
  const signIn = async (orgId = h.workspace.org.id) => (await signedInPerson(h.stack.orm, h.api.url, orgId, { email: person() })).client;
  const segmentsOf = (orgId: string) => h.stack.orm.em.fork().find(Segment, { orgId }, ALL_TENANTS);

  async function addContacts(orgId: string, list: { email: string; tags?: string[] }[]) {
    const em = scopeToOrg(h.stack.orm.em.fork(), orgId);
    const rows = list.map((c) => em.create(Contact, { orgId, email: c.email, tags: c.tags ?? [], customFields: {} }));
    await em.flush();
    return rows;
  }

  async function addSegment(orgId: string, fields: { name: string; type: 'tag' | 'all' | 'static'; tags?: string[] }) {
    const em = scopeToOrg(h.stack.orm.em.fork(), orgId);
    const segment = em.create(Segment, { orgId, name: fields.name, description: '', type: fields.type, tags: fields.tags ?? [] });
    await em.flush();
    return segment;
  }

  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(async () => h?.close());

  it('answers no segments page or form without a session, and refuses forms without the CSRF token', async () => {
    const segment = await addSegment(h.workspace.org.id, { name: 'Guarded', type: 'static' });
    const anonymous = dashboardClient(h.api.url);
    for (const path of [
      '/dashboard/segments',
      '/dashboard/segments/new',
      `/dashboard/segments/${segment.id}`,
      `/dashboard/segments/${segment.id}/edit`,
    ]) {
      expect((await anonymous.get(path)).status, path).toBe(303);
    }
    const client = await signIn();
    await client.get('/dashboard/segments');
    const before = (await segmentsOf(h.workspace.org.id)).length;
    for (const path of [
      '/dashboard/segments',
      `/dashboard/segments/${segment.id}`,
      `/dashboard/segments/${segment.id}/members`,
      `/dashboard/segments/${segment.id}/members/remove`,
    ]) {
      expect((await anonymous.post(path, { _csrf: 'x', name: 'Sneaky' })).status, path).toBe(303);
      expect((await client.post(path, { _csrf: 'wrong', name: 'Sneaky', action: 'save', emails: 'a@example.com' })).status, path).toBe(403);
    }
    expect(await segmentsOf(h.workspace.org.id)).toHaveLength(before);
    expect((await h.stack.orm.em.fork().findOneOrFail(Segment, { id: segment.id }, ALL_TENANTS)).name).toBe('Guarded');
  });

  it('lists segments with their stored counts (exact for static, an estimate with its time for dynamic), says what to do when there are none, and escapes names', async () => {
    const { org } = await createOrg(h.stack.orm);
    const client = await signIn(org.id);
    expect((await client.get('/dashboard/segments')).text).toContain('No segments yet.');
    await addContacts(org.id, [
      { email: 'a@example.org', tags: ['vip'] },
      { email: 'b@example.org', tags: ['vip', 'eu'] },
      { email: 'c@example.org' },
    ]);
    const hostile = '<img src=x onerror=alert(1)>';
    await addSegment(org.id, { name: hostile, type: 'tag', tags: ['vip'] });
    await addSegment(org.id, { name: 'Everyone', type: 'all' });
    const picked = await addSegment(org.id, { name: 'Picked', type: 'static' });
    const em = h.stack.orm.em.fork();
    const [first] = await em.find(Contact, { orgId: org.id, email: 'a@example.org' }, ALL_TENANTS);
    em.create(SegmentMember, { segmentId: picked.id, contactId: first!.id, orgId: org.id });
    await em.flush();
    const rowOf = (text: string, name: string) => text.slice(text.indexOf(`${name}</a>`)).split('</tr>')[0]!;

    // Segments never counted say so (and are counted after the page is answered); a static one's count is exact at once.
    const page = await client.get('/dashboard/segments');
    expect(page.text).not.toContain(hostile);
    expect(rowOf(page.text, 'Picked')).toContain('<span class="count-exact">1</span>');
    await expect
      .poll(async () => rowOf((await client.get('/dashboard/segments')).text, escaped(hostile)), { timeout: 10_000, interval: 100 })
      .toMatch(/<span class="count-estimate"[^>]*>≈ 2<\/span> <span class="hint count-time">as of <time datetime="/);
    const counted = await client.get('/dashboard/segments');
    expect(rowOf(counted.text, 'Everyone')).toMatch(/every contact[\s\S]*?≈ 3</);
    expect(counted.text).toContain("Static segments' counts are exact.");
  });

  it('shows a dynamic segment that was never counted as counting, not as a number', async () => {
    const { org } = await createOrg(h.stack.orm);
    await addContacts(org.id, [{ email: 'a@example.org', tags: ['vip'] }]);
    await addSegment(org.id, { name: 'Fresh', type: 'tag', tags: ['vip'] });
    const client = await signIn(org.id);
    const page = await client.get('/dashboard/segments');
    expect(page.text).toMatch(/Fresh<\/a>[\s\S]*?<span class="count-pending"[^>]*>counting…<\/span>/);
  });

  it('creates a dynamic segment after showing the count of its rule, then edits its tags', async () => {
    const { org } = await createOrg(h.stack.orm);
    await addContacts(org.id, [
      { email: 'x@example.org', tags: ['beta'] },
      { email: 'y@example.org', tags: ['gamma'] },
      { email: 'z@example.org' },
    ]);
    const client = await signIn(org.id);
    const blank = await client.get('/dashboard/segments/new');
    expect(blank.text).toContain('<strong>3</strong> contacts match this rule now.');
    const counted = await client.submit('/dashboard/segments/new', '/dashboard/segments', {
      name: 'Beta',
      description: '',
      kind: 'dynamic',
      tags: 'beta',
      action: 'count',
    });
    expect(counted.status).toBe(200);
    expect(counted.text).toContain('<strong>1</strong> contacts match this rule now.');
    expect(await segmentsOf(org.id)).toHaveLength(0);
    const created = await client.submit('/dashboard/segments/new', '/dashboard/segments', {
      name: 'Beta',
      description: 'testers',
      kind: 'dynamic',
      tags: 'beta',
      action: 'save',
    });
    expect(created.status).toBe(303);
    const [segment] = await segmentsOf(org.id);
    expect(segment).toMatchObject({ name: 'Beta', type: 'tag', tags: ['beta'] });
    const page = await client.get(created.headers.get('location')!);
    expect(page.text).toContain('<strong id="segment-count">1</strong>');
    expect(page.text).toContain('x@example.org');
    expect(page.text).not.toContain('y@example.org');

    const edited = await client.submit(`/dashboard/segments/${segment!.id}/edit`, `/dashboard/segments/${segment!.id}`, {
      name: 'Beta and gamma',
      description: '',
      kind: 'dynamic',
      tags: 'beta, gamma',
      action: 'save',
    });
    expect(edited.status).toBe(303);
    expect(await h.stack.orm.em.fork().findOneOrFail(Segment, { id: segment!.id }, ALL_TENANTS)).toMatchObject({
      name: 'Beta and gamma',
      tags: ['beta', 'gamma'],
    });
    expect((await client.get(`/dashboard/segments/${segment!.id}`)).text).toContain('<strong id="segment-count">2</strong>');

    for (const [field, value] of [
      ['name', ''],
      ['name', 'n'.repeat(121)],
      ['description', 'd'.repeat(501)],
      ['tags', 't'.repeat(101)],
      ['tags', Array.from({ length: 101 }, (_, i) => `t${i}`).join(',')],
    ] as const) {
      const bad = await client.submit('/dashboard/segments/new', '/dashboard/segments', {
        name: 'Ok',
        description: '',
        kind: 'dynamic',
        tags: '',
        action: 'save',
        [field]: value,
      });
      expect(bad.status, `${field}=${value.slice(0, 10)}`).toBe(400);
      expect(bad.text).toContain('role="alert"');
    }
  });

  it("adds and removes a static segment's members by address, within the API's limits", async () => {
    const { org } = await createOrg(h.stack.orm);
    const [a, b] = await addContacts(org.id, [{ email: 'm1@example.org' }, { email: 'm2@example.org' }]);
    const client = await signIn(org.id);
    const created = await client.submit('/dashboard/segments/new', '/dashboard/segments', {
      name: 'Hand-picked',
      description: '',
      kind: 'static',
      tags: '',
      action: 'save',
    });
    expect(created.status).toBe(303);
    const path = created.headers.get('location')!;
    const id = path.split('/').at(-1)!;
    expect((await client.get(path)).text).toContain('No members yet');
    const added = await client.submit(path, `${path}/members`, {
      emails: 'm1@example.org\nm2@example.org, nobody@example.org',
      action: 'add',
    });
    expect(added.status).toBe(200);
    expect(added.text).toContain('2 added, 0 were already members. No contact has nobody@example.org.');
    expect(await h.stack.orm.em.fork().count(SegmentMember, { segmentId: id }, ALL_TENANTS)).toBe(2);
    const removed = await client.submit(path, `${path}/members/remove`, { emails: b!.email });
    expect(removed.text).toContain('1 removed');
    expect(removed.text).toContain('<strong id="segment-count">1</strong>');
    expect(removed.text).toContain(a!.email);
    const tooMany = await client.submit(path, `${path}/members`, {
      emails: Array.from({ length: 1001 }, (_, i) => `u${i}@example.org`).join('\n'),
      action: 'add',
    });
    expect(tooMany.status).toBe(400);
    const empty = await client.submit(path, `${path}/members`, { emails: '', action: 'add' });
    expect(empty.status).toBe(400);
  });

  it("counts up to 10,000 members on a segment's page and the form and says 10,000+ past that; the list shows the stored count", async () => {
    const { org } = await createOrg(h.stack.orm);
    await h.stack.orm.em
      .fork()
      .getConnection()
      .execute(
        `insert into contacts (id, org_id, email, tags, created_at, updated_at)
         select 'f' || lpad(to_hex(g), 23, '0'), ?, 'bulk' || g || '@example.org', array['bulk'], now(), now() from generate_series(1, 10001) as g`,
        [org.id],
      );
    const segment = await addSegment(org.id, { name: 'Bulk', type: 'tag', tags: ['bulk'] });
    const client = await signIn(org.id);
    await expect
      .poll(async () => (await client.get('/dashboard/segments')).text, { timeout: 10_000, interval: 100 })
      .toContain('≈ 10,001</span>');
    expect((await client.get(`/dashboard/segments/${segment.id}`)).text).toContain('<strong id="segment-count">10,000+</strong>');
    expect((await client.get('/dashboard/segments/new')).text).toContain('<strong>10,000+</strong> contacts match');
  });

  it("answers 404 for another workspace's segment, and changes nothing of it", async () => {
    const { org } = await createOrg(h.stack.orm);
    const foreign = await addSegment(org.id, { name: 'Theirs', type: 'static' });
    const client = await signIn();
    for (const path of [`/dashboard/segments/${foreign.id}`, `/dashboard/segments/${foreign.id}/edit`, '/dashboard/segments/not-an-id']) {
      const page = await client.get(path);
      expect(page.status, path).toBe(404);
      expect(page.text).not.toContain('Theirs');
    }
    expect(
      (await client.submit('/dashboard/segments', `/dashboard/segments/${foreign.id}`, { name: 'Mine', kind: 'static', action: 'save' }))
        .status,
    ).toBe(404);
    expect(
      (await client.submit('/dashboard/segments', `/dashboard/segments/${foreign.id}/members`, { emails: 'a@example.org', action: 'add' }))
        .status,
    ).toBe(404);
    expect((await h.stack.orm.em.fork().findOneOrFail(Segment, { id: foreign.id }, ALL_TENANTS)).name).toBe('Theirs');
  });
});
