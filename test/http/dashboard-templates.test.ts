import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Template, TransactionalEmail } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { createTemplatesService } from '../../src/modules/templates/templates.service.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { csrfOf, dashboardClient, decodeEntities, signedInPerson } from '../support/dashboard-client.ts';
import { createOrg, unique } from '../support/factories.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';

describe("the dashboard's templates pages", () => {
  let h: ApiHarness;
  const email = () => `${unique('person').toLowerCase()}@example.com`;
  const person = (role: 'owner' | 'member' = 'member', orgId = h.workspace.org.id) =>
    signedInPerson(h.stack.orm, h.api.url, orgId, { email: email(), role });
  const templates = () => createTemplatesService({ orm: h.stack.orm });
  const templateRow = (orgId: string, id: string) => scopeToOrg(h.stack.orm.em.fork(), orgId).findOneOrFail(Template, { id });
  const newTemplate = (orgId: string, overrides: Partial<{ name: string; subject: string; html: string; folder_id: string }> = {}) =>
    templates().createTemplate(orgId, {
      name: overrides.name ?? unique('Template'),
      description: '',
      subject: overrides.subject ?? 'Hello {{first_name}}',
      preview_text: '',
      html: overrides.html ?? '<p>Hi {{first_name}}, your plan is {{plan}}.</p>',
      category: 'other',
      folder_id: overrides.folder_id ?? null,
      tags: [],
    });
  /** Posts the editor form of `pagePath` with the given fields (the page's CSRF token and one-time value). */
  const fieldsOf = (page: string) => ({ _csrf: csrfOf(page), _once: /name="_once" value="([^"]+)"/.exec(page)![1]! });

  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('answers no page without a session (303 to sign-in) and creates nothing', async () => {
    const template = await newTemplate(h.workspace.org.id);
    const client = dashboardClient(h.api.url);
    for (const path of [
      '/dashboard/templates',
      '/dashboard/templates/new',
      `/dashboard/templates/${template.id}`,
      `/dashboard/templates/${template.id}/preview`,
    ]) {
      const page = await client.get(path);
      expect(page.status, path).toBe(303);
      expect(page.headers.get('location'), path).toBe('/dashboard/sign-in');
    }
    for (const path of [
      '/dashboard/templates',
      `/dashboard/templates/${template.id}`,
      `/dashboard/templates/${template.id}/publish`,
      '/dashboard/templates/preview',
    ])
      expect((await client.post(path, { _csrf: 'x', name: 'Sneaky' })).status, path).toBe(303);
    expect(await templateRow(h.workspace.org.id, template.id)).toMatchObject({ name: template.name, status: 'draft', version: 1 });
  });

  it('shows an empty state that says what to do next', async () => {
    const { org } = await createOrg(h.stack.orm);
    const { client } = await person('member', org.id);
    const page = await client.get('/dashboard/templates');
    expect(page.status).toBe(200);
    expect(page.text).toContain('No templates yet.');
    expect(page.text).toContain('href="/dashboard/templates/new"');
    expect(page.text).toContain('aria-current="page">Templates');
  });

  it('creates a template from the form, then saves a new version and publishes it', async () => {
    const { client } = await person();
    const form = await client.get('/dashboard/templates/new');
    expect(form.status).toBe(200);
    const name = unique('Welcome');
    const created = await client.post('/dashboard/templates', {
      ...fieldsOf(form.text),
      name,
      subject: 'Welcome {{first_name}}',
      preview_text: '',
      html: '<h1>Hi {{first_name}}</h1>{{#vip}}<p>VIP</p>{{/vip}}',
      folder_id: 'onboarding',
      category: 'welcome',
    });
    expect(created.status, created.text).toBe(303);
    const id = /\/dashboard\/templates\/([0-9a-f]{24})\?saved=1/.exec(created.headers.get('location') ?? '')![1]!;
    const editor = await client.get(`/dashboard/templates/${id}?saved=1`);
    expect(editor.text).toContain('Saved as version 1.');
    expect(editor.text).toContain('<code>{{first_name}}</code>');
    expect(editor.text).toContain('<code>{{vip}}</code> <span class="hint">(section: optional)</span>');
    expect(editor.headers.get('content-security-policy')).toContain("frame-src 'self'");
    expect(editor.text).toContain(`src="/dashboard/templates/${id}/preview"`);

    const saved = await client.post(`/dashboard/templates/${id}`, {
      ...fieldsOf(editor.text),
      name,
      subject: 'Welcome aboard',
      html: '<p>v2</p>',
      folder_id: 'onboarding',
      category: 'welcome',
    });
    expect(saved.status, saved.text).toBe(303);
    expect(await templateRow(h.workspace.org.id, id)).toMatchObject({ subject: 'Welcome aboard', version: 2, folderId: 'onboarding' });

    const again = await client.get(`/dashboard/templates/${id}`);
    const published = await client.post(`/dashboard/templates/${id}/publish`, fieldsOf(again.text.slice(again.text.indexOf('/publish"'))));
    expect(published.status, published.text).toBe(303);
    expect(await templateRow(h.workspace.org.id, id)).toMatchObject({ status: 'published', version: 3 });
    const list = await client.get('/dashboard/templates?folder=onboarding');
    expect(list.text).toContain(name);
    expect(list.text).toMatch(/class="state published"/);
    expect((await client.get('/dashboard/templates?folder=elsewhere')).text).not.toContain(name);
  });

  it('shows problems inline and keeps what was typed; limits are the API’s', async () => {
    const { client } = await person();
    const form = await client.get('/dashboard/templates/new');
    const tooLong = await client.post('/dashboard/templates', {
      ...fieldsOf(form.text),
      name: 'x'.repeat(201),
      subject: 'Line\nbreak',
      html: '<p>kept</p>',
    });
    expect(tooLong.status).toBe(400);
    expect(tooLong.text).toContain('id="t-name-error"');
    expect(tooLong.text).toContain('id="t-subject-error"');
    expect(tooLong.text).toContain('must be a single line');
    expect(tooLong.text).toContain('&#60;p&#62;kept&#60;/p&#62;</textarea>');
    expect(tooLong.text).toContain('aria-invalid="true"');

    // 500,000 characters of HTML are accepted (more than a usual 64 kB form), one more is not.
    const big = await client.get('/dashboard/templates/new');
    const ok = await client.post('/dashboard/templates', {
      ...fieldsOf(big.text),
      name: unique('Big'),
      subject: 'Big',
      html: 'a'.repeat(500_000),
    });
    expect(ok.status, ok.text.slice(0, 300)).toBe(303);
    const over = await client.get('/dashboard/templates/new');
    const refused = await client.post('/dashboard/templates', {
      ...fieldsOf(over.text),
      name: unique('Big'),
      subject: 'Big',
      html: 'a'.repeat(500_001),
    });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('id="t-html-error"');

    const template = await newTemplate(h.workspace.org.id, { html: '<p>{{#open}}never closed</p>' });
    const editor = await client.get(`/dashboard/templates/${template.id}`);
    expect(editor.text).toContain('Not a valid Mustache template');
    const publish = await client.post(
      `/dashboard/templates/${template.id}/publish`,
      fieldsOf(editor.text.slice(editor.text.indexOf('/publish"'))),
    );
    expect(publish.status).toBe(400);
    expect(publish.text).toContain('Not published: the template is not valid Mustache');
    expect((await templateRow(h.workspace.org.id, template.id)).status).toBe('draft');
  });

  it('refuses every form without its CSRF token (403) and changes nothing', async () => {
    const template = await newTemplate(h.workspace.org.id);
    const { client } = await person();
    const { client: other } = await person();
    const foreignToken = csrfOf((await other.get('/dashboard/templates/new')).text);
    for (const path of [
      '/dashboard/templates',
      `/dashboard/templates/${template.id}`,
      `/dashboard/templates/${template.id}/publish`,
      `/dashboard/templates/${template.id}/test`,
      '/dashboard/templates/preview',
    ]) {
      expect((await client.post(path, { name: 'Changed' })).status, path).toBe(403);
      expect((await client.post(path, { _csrf: foreignToken, name: 'Changed' })).status, path).toBe(403);
    }
    const page = await client.get(`/dashboard/templates/${template.id}`);
    const crossSite = await client.post(
      `/dashboard/templates/${template.id}`,
      { _csrf: csrfOf(page.text), name: 'Changed' },
      { origin: 'https://evil.example' },
    );
    expect(crossSite.status).toBe(403);
    expect(await templateRow(h.workspace.org.id, template.id)).toMatchObject({ name: template.name, version: 1, status: 'draft' });
  });

  it("answers 404 for another workspace's template on every page and form", async () => {
    const { org } = await createOrg(h.stack.orm);
    const foreign = await newTemplate(org.id, { name: 'Foreign secret' });
    const { client } = await person('owner');
    for (const path of [`/dashboard/templates/${foreign.id}`, `/dashboard/templates/${foreign.id}/preview`, '/dashboard/templates/zzz']) {
      const page = await client.get(path);
      expect(page.status, path).toBe(404);
      expect(page.text).not.toContain('Foreign secret');
    }
    const token = csrfOf((await client.get('/dashboard/templates/new')).text);
    for (const action of ['', '/publish', '/test'])
      expect((await client.post(`/dashboard/templates/${foreign.id}${action}`, { _csrf: token, name: 'Taken' })).status, action).toBe(404);
    expect(await templateRow(org.id, foreign.id)).toMatchObject({ name: 'Foreign secret', status: 'draft', version: 1 });
  });

  it('escapes names, subjects and bodies outside the sandboxed preview', async () => {
    const evil = '<img src=x onerror=alert(1)>';
    const template = await newTemplate(h.workspace.org.id, {
      name: `N ${evil}`,
      subject: `S ${evil}`,
      html: `<script>alert(2)</script><p>{{first_name}}</p>`,
      folder_id: `F ${evil}`,
    });
    const { client } = await person();
    const list = await client.get('/dashboard/templates');
    const editor = await client.get(`/dashboard/templates/${template.id}`);
    for (const page of [list.text, editor.text]) {
      expect(page).not.toContain(evil);
      expect(page).not.toContain('<script>alert(2)');
      expect(page).toContain('&#60;img src&#61;x onerror&#61;alert(1)&#62;');
    }
    const preview = await client.get(`/dashboard/templates/${template.id}/preview`);
    expect(preview.status).toBe(200);
    expect(preview.headers.get('content-security-policy')).toMatch(/default-src 'none'.*sandbox$/);
    expect(preview.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(preview.text).not.toContain('<script>alert(2)');
    expect(preview.text).toContain('<iframe class="message-html" sandbox ');
    const srcdoc = decodeEntities(/srcdoc="([^"]*)"/.exec(preview.text)![1]!);
    expect(srcdoc).toBe('<script>alert(2)</script><p>Ada</p>');
    expect(preview.text).toContain('S &#60;img src&#61;x onerror&#61;alert(1)&#62;');
  });

  it('previews what the form holds with the sample variables, without using up the form', async () => {
    const template = await newTemplate(h.workspace.org.id);
    const { client } = await person();
    const editor = await client.get(`/dashboard/templates/${template.id}`);
    const fields = fieldsOf(editor.text);
    expect(decodeEntities(editor.text)).toContain('"plan": "[plan]"');
    const preview = await client.post('/dashboard/templates/preview', {
      ...fields,
      subject: 'Hi {{first_name}}',
      html: '<p>Dear {{first_name}}, <a href="https://example.com/p">your {{plan}} plan</a></p>',
      variables: '{"first_name": "Grace", "plan": "Pro"}',
    });
    expect(preview.status).toBe(200);
    expect(preview.headers.get('content-security-policy')).toContain('sandbox');
    expect(preview.text).toContain('<dd id="preview-subject">Hi Grace</dd>');
    expect(decodeEntities(/srcdoc="([^"]*)"/.exec(preview.text)![1]!)).toContain('Dear Grace');
    expect(/<pre class="message-text" id="preview-text">([^<]*)<\/pre>/.exec(preview.text)![1]).toContain(
      'Dear Grace, your Pro plan [https://example.com/p]',
    );
    const bad = await client.post('/dashboard/templates/preview', { ...fields, html: '<p>{{x}}</p>', variables: '{nope' });
    expect(bad.text).toContain('The sample variables are not valid JSON');
    // The editor's one-time value still saves after the previews.
    const saved = await client.post(`/dashboard/templates/${template.id}`, {
      ...fields,
      name: template.name,
      subject: 'After preview',
      html: template.html,
      category: 'other',
    });
    expect(saved.status, saved.text.slice(0, 400)).toBe(303);
  });

  it("sends a test to one of the workspace's people through the sends service, with the person's semantics", async () => {
    const domain = await addSendingDomain(h.stack.orm, h.workspace.org.id);
    await setCredits(h.stack.orm, h.workspace.org.id, 100);
    const template = await newTemplate(h.workspace.org.id, { subject: 'Receipt for {{first_name}}' });
    const member = await person('member');
    const editor = await member.client.get(`/dashboard/templates/${template.id}`);
    const userId = /<option value="([0-9a-f]{24})" selected>/.exec(editor.text)![1]!;
    const testForm = editor.text.slice(editor.text.indexOf('/test"'));
    const sent = await member.client.post(`/dashboard/templates/${template.id}/test`, {
      ...fieldsOf(testForm),
      user_id: userId,
      from: `test@${domain.domain}`,
    });
    expect(sent.status, sent.text.slice(0, 500)).toBe(200);
    expect(sent.text).toContain(`sent to ${member.email}`);
    expect(sent.text).toContain('stays in the sandbox');
    const emailId = /\(email ([0-9a-f]{24})\)/.exec(sent.text)![1]!;
    const row = await scopeToOrg(h.stack.orm.em.fork(), h.workspace.org.id).findOneOrFail(TransactionalEmail, { id: emailId });
    expect(row).toMatchObject({ subject: '[Test] Receipt for Ada', sandbox: true });

    const { org } = await createOrg(h.stack.orm);
    const outsider = await signedInPerson(h.stack.orm, h.api.url, org.id, { email: email() });
    const [outsiderRow] = await h.stack.orm.em
      .fork()
      .getConnection()
      .execute<{ id: string }[]>('select id from users where email = ?', [outsider.email]);
    const again = await member.client.get(`/dashboard/templates/${template.id}`);
    const refused = await member.client.post(`/dashboard/templates/${template.id}/test`, {
      ...fieldsOf(again.text.slice(again.text.indexOf('/test"'))),
      user_id: outsiderRow!.id,
      from: `test@${domain.domain}`,
    });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('Choose a person of this workspace');

    const third = await member.client.get(`/dashboard/templates/${template.id}`);
    const noDomain = await member.client.post(`/dashboard/templates/${template.id}/test`, {
      ...fieldsOf(third.text.slice(third.text.indexOf('/test"'))),
      user_id: userId,
      from: 'test@not-ours.example.org',
    });
    expect(noDomain.status).toBe(403);
    expect(noDomain.text).toContain('No test sent:');
  });

  it("filters by folder in the query: a folder's template older than a full page of others is listed, with every folder offered", async () => {
    const { org } = await createOrg(h.stack.orm);
    const folder = unique('archive');
    const old = await newTemplate(org.id, { name: 'Old archived letter', folder_id: folder });
    await newTemplate(org.id, { name: 'Other folder letter', folder_id: `${folder}-b` });
    const newer = await Promise.all(
      Array.from({ length: 100 }, () =>
        templates().createTemplate(org.id, {
          name: unique('Newer'),
          description: '',
          subject: '',
          preview_text: '',
          html: '',
          category: 'other',
          folder_id: null,
          tags: [],
        }),
      ),
    );
    expect(newer).toHaveLength(100);
    const { client } = await person('member', org.id);
    const all = await client.get('/dashboard/templates');
    expect(all.text).not.toContain('Old archived letter');
    expect(all.text).toContain(`href="/dashboard/templates?folder=${encodeURIComponent(folder)}"`);
    const filtered = await client.get(`/dashboard/templates?folder=${encodeURIComponent(folder)}`);
    expect(filtered.text).toContain('Old archived letter');
    expect(filtered.text).toContain(`/dashboard/templates/${old.id}`);
    expect(filtered.text).not.toContain('Other folder letter');
    expect(filtered.text).not.toContain('Newer');
    expect((await client.get('/dashboard/templates?folder=nothing-here')).text).toContain('No templates in the folder “nothing-here”.');
  });
});
