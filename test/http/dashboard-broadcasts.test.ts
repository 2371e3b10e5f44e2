import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broadcast, Segment, Suppression } from '../../db/entities/index.ts';
import { scopeToOrg, type MikroORM } from '../../db/orm.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { createTemplatesService } from '../../src/modules/templates/templates.service.ts';
import { createStreamsService } from '../../src/modules/streams/streams.service.ts';
import { broadcastSendWorkflowId } from '../../workflows/broadcasts.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { addContacts } from '../support/automations.ts';
import { csrfOf, dashboardClient, decodeEntities, signedInPerson } from '../support/dashboard-client.ts';
import { createOrgWithKey, unique } from '../support/factories.ts';
import { addSendingDomain } from '../support/sending.ts';

async function tagSegment(orm: MikroORM, orgId: string, tag: string, name = unique('Segment')): Promise<Segment> {
  const em = scopeToOrg(orm.em.fork(), orgId);
  const segment = em.create(Segment, { orgId, name, type: 'tag', tags: [tag] });
  await em.flush();
  return segment;
}

describe("the dashboard's broadcasts pages", () => {
  let h: ApiHarness;
  let temporal: TemporalClientHandle;
  let domain = '';
  const launched: string[] = [];
  const person = (role: 'owner' | 'member' = 'owner', orgId = h.workspace.org.id) =>
    signedInPerson(h.stack.orm, h.api.url, orgId, { email: `${unique('p').toLowerCase()}@example.com`, role });
  const row = (orgId: string, id: string) => scopeToOrg(h.stack.orm.em.fork(), orgId).findOneOrFail(Broadcast, { id });
  const once = (page: string) => ({ _csrf: csrfOf(page), _once: /name="_once" value="([^"]+)"/.exec(page)![1]! });
  /** A draft made with the API (as a script would), to `segmentIds`. */
  async function draft(overrides: Record<string, unknown> = {}, request = h.request, from = `news@${domain}`) {
    const response = await request('POST', '/api/v1/outbox/broadcasts', {
      headers: idem(),
      body: {
        name: unique('Newsletter'),
        subject: 'News',
        from_name: 'Shop',
        from_email: from,
        html: '<p>Hi {{first_name}}</p>',
        ...overrides,
      },
    });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return (response.body.data as { _id: string })._id;
  }
  const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString().slice(0, 16);

  beforeAll(async () => {
    h = await startApiHarness();
    temporal = await connectTemporalClient(h.stack.config);
    domain = (await addSendingDomain(h.stack.orm, h.workspace.org.id)).domain;
  });
  afterAll(async () => {
    for (const id of launched)
      await temporal.client.workflow
        .getHandle(broadcastSendWorkflowId(id))
        .terminate('test over')
        .catch(() => {});
    await temporal.close();
    await h.close();
  });

  it('answers no page without a session (303 to sign-in) and launches nothing', async () => {
    const segment = await tagSegment(h.stack.orm, h.workspace.org.id, 'nosession');
    const id = await draft({ segment_ids: [segment.id] });
    const client = dashboardClient(h.api.url);
    for (const path of [
      '/dashboard/broadcasts',
      '/dashboard/broadcasts/new',
      `/dashboard/broadcasts/${id}`,
      `/dashboard/broadcasts/${id}/launch`,
      `/dashboard/broadcasts/${id}/edit`,
    ])
      expect((await client.get(path)).headers.get('location'), path).toBe('/dashboard/sign-in');
    for (const path of [
      '/dashboard/broadcasts',
      '/dashboard/broadcasts/new/audience',
      `/dashboard/broadcasts/${id}/launch`,
      `/dashboard/broadcasts/${id}/cancel`,
      `/dashboard/broadcasts/${id}/edit`,
      `/dashboard/broadcasts/${id}/delete`,
    ])
      expect((await client.post(path, { _csrf: 'x', when: 'now' })).status, path).toBe(303);
    expect((await row(h.workspace.org.id, id)).status).toBe('draft');
  });

  it('shows an empty state that says what to do next', async () => {
    const other = await createOrgWithKey(h.stack.orm);
    const { client } = await person('member', other.org.id);
    const page = await client.get('/dashboard/broadcasts');
    expect(page.status).toBe(200);
    expect(page.text).toContain('No broadcasts yet.');
    expect(page.text).toContain('href="/dashboard/broadcasts/new"');
    const compose = await client.get('/dashboard/broadcasts/new');
    expect(compose.text).toContain('This workspace has no segments yet');
  });

  it('composes a draft from a template, counts the audience of the picked segments and saves it', async () => {
    const orgId = h.workspace.org.id;
    const tag = unique('vip').toLowerCase();
    const segment = await tagSegment(h.stack.orm, orgId, tag, 'VIP customers');
    await addContacts(
      h.stack.orm,
      orgId,
      ['a', 'b', 'c'].map((n) => `${n}-${tag}@example.com`),
      { tags: [tag] },
    );
    await addContacts(h.stack.orm, orgId, [`gone-${tag}@example.com`], { tags: [tag], status: 'unsubscribed' });
    await addContacts(h.stack.orm, orgId, [`blocked-${tag}@example.com`], { tags: [tag] });
    const em = scopeToOrg(h.stack.orm.em.fork(), orgId);
    em.create(Suppression, { orgId, email: `blocked-${tag}@example.com`, reason: 'manual' });
    await em.flush();
    const template = await createTemplatesService({ orm: h.stack.orm }).createTemplate(orgId, {
      name: 'Winter sale',
      description: '',
      subject: 'Sale for {{first_name}}',
      preview_text: 'Up to 50 %',
      html: '<p>Hello {{first_name}}</p>',
      category: 'marketing',
      folder_id: null,
      tags: [],
    });
    await createTemplatesService({ orm: h.stack.orm }).updateTemplate(orgId, template.id, { status: 'published' });
    const { client } = await person();
    const compose = await client.get(`/dashboard/broadcasts/new?template=${template.id}`);
    expect(compose.status).toBe(200);
    expect(compose.text).toContain('value="Sale for {{first_name}}"');
    // The segment was never counted: the picker says so, and shows the count once it is taken (after the page is answered).
    expect(compose.text).toMatch(
      /VIP customers<\/label> <span class="hint"><span class="count-pending"[^>]*>counting…<\/span> contacts \(any status\)<\/span>/,
    );
    await expect
      .poll(async () => (await client.get(`/dashboard/broadcasts/new?template=${template.id}`)).text, { timeout: 10_000, interval: 100 })
      .toMatch(
        /VIP customers<\/label> <span class="hint"><span class="count-estimate"[^>]*>≈ 5<\/span> <span class="hint count-time">as of <time/,
      );
    const fields = {
      name: 'Winter sale',
      subject: 'Sale for {{first_name}}',
      from_name: 'Shop',
      from_email: `news@${domain}`,
      html: '<p>Hello {{first_name}}</p>',
      segment_ids: segment.id,
    };
    const counted = await client.post('/dashboard/broadcasts/new/audience', { ...once(compose.text), ...fields });
    expect(counted.status).toBe(200);
    expect(counted.text).toContain('reach <strong>3</strong> people today');
    const saved = await client.post('/dashboard/broadcasts', { ...once(compose.text), ...fields });
    expect(saved.status, saved.text.slice(0, 300)).toBe(303);
    const id = /\/dashboard\/broadcasts\/([0-9a-f]{24})$/.exec(saved.headers.get('location') ?? '')![1]!;
    expect(await row(orgId, id)).toMatchObject({ status: 'draft', segmentIds: [segment.id], subject: 'Sale for {{first_name}}' });
    const confirm = await client.get(`/dashboard/broadcasts/${id}/launch`);
    expect(confirm.text).toContain('<strong id="audience-size">3 people</strong>');
    expect(confirm.text).toContain('Send to 3 people');
  });

  it('shows problems inline next to their fields, with the API’s limits', async () => {
    const { client } = await person();
    const compose = await client.get('/dashboard/broadcasts/new');
    const segment = await tagSegment(h.stack.orm, h.workspace.org.id, 'limits');
    const bad = await client.post('/dashboard/broadcasts', {
      ...once(compose.text),
      name: 'x'.repeat(201),
      subject: '',
      from_name: 'Shop',
      from_email: 'news@not-ours.example.org',
      html: 'a'.repeat(500_001),
      segment_ids: segment.id,
    });
    expect(bad.status).toBe(400);
    for (const field of ['name', 'subject', 'html']) expect(bad.text, field).toContain(`id="b-${field}-error"`);
    const noSegment = await client.post('/dashboard/broadcasts', {
      ...once((await client.get('/dashboard/broadcasts/new')).text),
      name: 'Ok',
      subject: 'Ok',
      from_name: 'Shop',
      from_email: 'news@not-ours.example.org',
    });
    expect(noSegment.status).toBe(400);
    expect(noSegment.text).toContain('id="b-segments-error"');
    const unknownDomain = await client.post('/dashboard/broadcasts', {
      ...once((await client.get('/dashboard/broadcasts/new')).text),
      name: 'Ok',
      subject: 'Ok',
      from_name: 'Shop',
      from_email: 'news@not-ours.example.org',
      segment_ids: segment.id,
    });
    expect(unknownDomain.status).toBe(400);
    expect(unknownDomain.text).toContain('id="b-from_email-error"');
    expect(unknownDomain.text).toContain('value="news@not-ours.example.org"');
  });

  it('refuses every form without its CSRF token (403)', async () => {
    const segment = await tagSegment(h.stack.orm, h.workspace.org.id, 'csrf');
    const id = await draft({ segment_ids: [segment.id] });
    const { client } = await person();
    const { client: other } = await person();
    const foreign = csrfOf((await other.get('/dashboard/broadcasts/new')).text);
    for (const path of [
      '/dashboard/broadcasts',
      '/dashboard/broadcasts/new/audience',
      `/dashboard/broadcasts/${id}/launch`,
      `/dashboard/broadcasts/${id}/cancel`,
      `/dashboard/broadcasts/${id}/edit`,
      `/dashboard/broadcasts/${id}/delete`,
    ]) {
      expect((await client.post(path, { when: 'now' })).status, path).toBe(403);
      expect((await client.post(path, { _csrf: foreign, when: 'now' })).status, path).toBe(403);
    }
    expect((await row(h.workspace.org.id, id)).status).toBe('draft');
  });

  it("answers 404 for another workspace's broadcast and template", async () => {
    const other = await createOrgWithKey(h.stack.orm, { scopes: ['all'] });
    const otherDomain = (await addSendingDomain(h.stack.orm, other.org.id)).domain;
    const otherSegment = await tagSegment(h.stack.orm, other.org.id, 'theirs');
    const { apiClient } = await import('../support/http.ts');
    const foreign = await draft(
      { name: 'Foreign plan', segment_ids: [otherSegment.id] },
      apiClient(h.api.url, other.key),
      `news@${otherDomain}`,
    );
    const { client } = await person();
    for (const path of [
      `/dashboard/broadcasts/${foreign}`,
      `/dashboard/broadcasts/${foreign}/launch`,
      `/dashboard/broadcasts/${foreign}/edit`,
      '/dashboard/broadcasts/nope',
    ]) {
      const page = await client.get(path);
      expect(page.status, path).toBe(404);
      expect(page.text).not.toContain('Foreign plan');
    }
    const foreignTemplate = await createTemplatesService({ orm: h.stack.orm }).createTemplate(other.org.id, {
      name: 'Foreign template',
      description: '',
      subject: 'Theirs',
      preview_text: '',
      html: '<p>theirs</p>',
      category: 'other',
      folder_id: null,
      tags: [],
    });
    const fromTheirs = await client.get(`/dashboard/broadcasts/new?template=${foreignTemplate.id}`);
    expect(fromTheirs.status).toBe(404);
    expect(fromTheirs.text).not.toContain('Foreign template');
    const token = csrfOf((await client.get('/dashboard/broadcasts/new')).text);
    for (const action of ['launch', 'cancel', 'edit', 'delete'])
      expect((await client.post(`/dashboard/broadcasts/${foreign}/${action}`, { _csrf: token, when: 'now' })).status).toBe(404);
    expect((await row(other.org.id, foreign)).status).toBe('draft');
  });

  it('escapes names, subjects and bodies; the body only in a sandboxed frame', async () => {
    const evil = '<img src=x onerror=alert(1)>';
    const segment = await tagSegment(h.stack.orm, h.workspace.org.id, 'escape', `Seg ${evil}`);
    const id = await draft({
      name: `N ${evil}`,
      subject: `S ${evil}`,
      html: '<script>alert(2)</script><p>hi</p>',
      segment_ids: [segment.id],
    });
    const { client } = await person();
    for (const path of [
      '/dashboard/broadcasts',
      `/dashboard/broadcasts/${id}`,
      `/dashboard/broadcasts/${id}/launch`,
      '/dashboard/broadcasts/new',
    ]) {
      const page = await client.get(path);
      expect(page.text, path).not.toContain(evil);
      expect(page.text, path).not.toContain('<script>alert(2)');
    }
    const page = await client.get(`/dashboard/broadcasts/${id}`);
    expect(page.text).toContain('N &#60;img src&#61;x onerror&#61;alert(1)&#62;');
    expect(decodeEntities(/<iframe class="message-html" sandbox [^>]*srcdoc="([^"]*)"/.exec(page.text)![1]!)).toBe(
      '<script>alert(2)</script><p>hi</p>',
    );
  });

  it('launches after the confirmation, follows it, refuses a second launch and cancels once, as messages', async () => {
    const orgId = h.workspace.org.id;
    const segment = await tagSegment(h.stack.orm, orgId, 'launch');
    const id = await draft({ segment_ids: [segment.id] });
    const { client } = await person('owner');
    const confirm = await client.get(`/dashboard/broadcasts/${id}/launch`);
    const past = await client.post(`/dashboard/broadcasts/${id}/launch`, {
      ...once(confirm.text),
      when: 'later',
      at: '2020-01-01T09:00',
      track_opens: 'on',
      track_clicks: 'on',
    });
    expect(past.status).toBe(400);
    expect(past.text).toContain('Not sent:');
    expect(past.text).toContain('value="2020-01-01T09:00"');
    expect((await row(orgId, id)).status).toBe('draft');

    const again = await client.get(`/dashboard/broadcasts/${id}/launch`);
    const at = inAnHour();
    const ok = await client.post(`/dashboard/broadcasts/${id}/launch`, {
      ...once(again.text),
      when: 'later',
      at,
      track_opens: 'on',
      track_clicks: 'on',
    });
    expect(ok.status, ok.text.slice(0, 300)).toBe(303);
    launched.push(id);
    expect(await row(orgId, id)).toMatchObject({
      status: 'scheduled',
      sandbox: false,
      trackOpens: true,
      trackClicks: true,
      scheduledAt: new Date(`${at}:00Z`),
    });
    const page = await client.get(`/dashboard/broadcasts/${id}?done=launched`);
    expect(page.text).toContain('Launched: the counters below follow it.');
    expect(page.text).toMatch(/class="state scheduled"/);
    expect(page.headers.get('refresh')).toBe('5');
    expect(page.text).toContain('data-chart="funnel"');

    expect((await client.get(`/dashboard/broadcasts/${id}/launch`)).status).toBe(409);
    const twice = await client.post(`/dashboard/broadcasts/${id}/launch`, {
      ...once((await client.get(`/dashboard/broadcasts/${id}`)).text),
      when: 'now',
    });
    expect(twice.status).toBe(409);
    expect(twice.text).toContain('only a draft can be launched');

    const cancel = await client.post(`/dashboard/broadcasts/${id}/cancel`, once(page.text));
    expect(cancel.status).toBe(303);
    expect((await row(orgId, id)).status).toBe('cancelled');
    const after = await client.get(`/dashboard/broadcasts/${id}`);
    expect(after.headers.get('refresh')).toBeNull();
    const cancelTwice = await client.post(
      `/dashboard/broadcasts/${id}/cancel`,
      once(page.text.replace(/name="_once" value="[^"]+"/, `name="_once" value="${'A'.repeat(22)}"`)),
    );
    expect(cancelTwice.status).toBe(409);
    expect(cancelTwice.text).toContain('only a scheduled or sending broadcast can be cancelled');
  });

  it("launches a member's broadcast as a test: into the sandbox", async () => {
    const segment = await tagSegment(h.stack.orm, h.workspace.org.id, 'member');
    const id = await draft({ segment_ids: [segment.id] });
    const { client } = await person('member');
    const confirm = await client.get(`/dashboard/broadcasts/${id}/launch`);
    expect(confirm.text).toContain('every message goes to the sandbox');
    const ok = await client.post(`/dashboard/broadcasts/${id}/launch`, { ...once(confirm.text), when: 'later', at: inAnHour() });
    expect(ok.status).toBe(303);
    launched.push(id);
    expect(await row(h.workspace.org.id, id)).toMatchObject({ status: 'scheduled', sandbox: true, trackOpens: false, trackClicks: false });
  });

  it("edits a draft (subject, content, segments, sender, schedule, stream) with the API's checks, then deletes it", async () => {
    const orgId = h.workspace.org.id;
    const first = await tagSegment(h.stack.orm, orgId, unique('first'), 'First segment');
    const second = await tagSegment(h.stack.orm, orgId, unique('second'), 'Second segment');
    const stream = unique('digest')
      .toLowerCase()
      .replace(/[^a-z0-9_-]/g, '-');
    await createStreamsService({ orm: h.stack.orm }).createStream(orgId, { name: stream, kind: 'broadcast' });
    await createStreamsService({ orm: h.stack.orm }).createStream(orgId, { name: `${stream}-tx`, kind: 'transactional' });
    const id = await draft({ segment_ids: [first.id] });
    const { client } = await person();
    const page = await client.get(`/dashboard/broadcasts/${id}`);
    expect(page.text).toContain(`href="/dashboard/broadcasts/${id}/edit"`);
    const edit = await client.get(`/dashboard/broadcasts/${id}/edit`);
    expect(edit.status).toBe(200);
    expect(edit.text).toContain(`action="/dashboard/broadcasts/${id}/edit"`);
    expect(edit.text).toContain(`<option value="${stream}">${stream}</option>`);
    // Transactional-kind streams are not offered to a broadcast.
    expect(edit.text).not.toContain(`<option value="${stream}-tx">`);
    const at = inAnHour();
    const fields = {
      name: 'Renamed',
      subject: 'New subject',
      from_name: 'Shop team',
      from_email: `team@${domain}`,
      reply_to: '',
      html: '<p>New body</p>',
      plain_text: 'New body',
      segment_ids: second.id,
      stream,
      scheduled_at: at,
    };
    const bad = await client.post(`/dashboard/broadcasts/${id}/edit`, { ...once(edit.text), ...fields, stream: `${stream}-tx` });
    expect(bad.status).toBe(422);
    expect(bad.text).toContain('is not a stream of the broadcast kind');
    expect((await row(orgId, id)).subject).toBe('News');
    const saved = await client.post(`/dashboard/broadcasts/${id}/edit`, { ...once(bad.text), ...fields });
    expect(saved.status, saved.text.slice(0, 300)).toBe(303);
    expect(await row(orgId, id)).toMatchObject({
      name: 'Renamed',
      subject: 'New subject',
      fromName: 'Shop team',
      fromEmail: `team@${domain}`,
      html: '<p>New body</p>',
      segmentIds: [second.id],
      stream,
      scheduledAt: new Date(`${at}:00Z`),
      status: 'draft',
    });
    const shown = await client.get(`/dashboard/broadcasts/${id}?done=saved`);
    expect(shown.text).toContain('Draft saved.');
    expect(shown.text).toContain(`<dt>Stream</dt><dd>${stream}</dd>`);
    // An emptied schedule clears it.
    const again = await client.get(`/dashboard/broadcasts/${id}/edit`);
    expect(again.text).toContain(`value="${at}"`);
    expect((await client.post(`/dashboard/broadcasts/${id}/edit`, { ...once(again.text), ...fields, scheduled_at: '' })).status).toBe(303);
    expect((await row(orgId, id)).scheduledAt).toBeNull();

    const confirm = await client.get(`/dashboard/broadcasts/${id}`);
    const deleted = await client.post(`/dashboard/broadcasts/${id}/delete`, once(confirm.text));
    expect(deleted.status).toBe(303);
    expect(deleted.headers.get('location')).toBe('/dashboard/broadcasts?done=deleted');
    expect(await scopeToOrg(h.stack.orm.em.fork(), orgId).count(Broadcast, { id })).toBe(0);
    expect((await client.get(`/dashboard/broadcasts/${id}`)).status).toBe(404);
  });

  it('says why a launched broadcast cannot be edited or deleted, and refuses both (409)', async () => {
    const orgId = h.workspace.org.id;
    const segment = await tagSegment(h.stack.orm, orgId, unique('locked'));
    const id = await draft({ segment_ids: [segment.id] });
    await scopeToOrg(h.stack.orm.em.fork(), orgId).nativeUpdate(Broadcast, { id }, { status: 'sent', launchedAt: new Date() });
    const { client } = await person();
    const page = await client.get(`/dashboard/broadcasts/${id}`);
    expect(page.text).toContain('can no longer be edited or deleted');
    expect(page.text).not.toContain(`/dashboard/broadcasts/${id}/edit`);
    expect((await client.get(`/dashboard/broadcasts/${id}/edit`)).status).toBe(409);
    const edit = await client.post(`/dashboard/broadcasts/${id}/edit`, { ...once(page.text), name: 'x', subject: 'y' });
    expect(edit.status).toBe(409);
    expect(edit.text).toContain('only a draft can be edited or deleted');
    const deleted = await client.post(`/dashboard/broadcasts/${id}/delete`, once((await client.get(`/dashboard/broadcasts/${id}`)).text));
    expect(deleted.status).toBe(409);
    expect(deleted.text).toContain('only a draft can be edited or deleted');
    expect(await row(orgId, id)).toMatchObject({ status: 'sent', subject: 'News' });
  });

  it('launches with open and click tracking chosen separately', async () => {
    const segment = await tagSegment(h.stack.orm, h.workspace.org.id, unique('tracked'));
    const id = await draft({ segment_ids: [segment.id] });
    const { client } = await person();
    const confirm = await client.get(`/dashboard/broadcasts/${id}/launch`);
    expect(confirm.text).toContain('name="track_opens"');
    expect(confirm.text).toContain('name="track_clicks"');
    const ok = await client.post(`/dashboard/broadcasts/${id}/launch`, {
      ...once(confirm.text),
      when: 'later',
      at: inAnHour(),
      track_clicks: 'on',
    });
    expect(ok.status).toBe(303);
    launched.push(id);
    expect(await row(h.workspace.org.id, id)).toMatchObject({ status: 'scheduled', trackOpens: false, trackClicks: true });
  });
});
