import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact, ContactImport, ContactImportMember } from '../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { csrfOf, dashboardClient, decodeEntities, signedInPerson } from '../support/dashboard-client.ts';
import { createOrg, unique } from '../support/factories.ts';

/** Text as the pages' templates escape it (ghtml: " & ' < = > as numeric references). */
const escaped = (text: string) => text.replace(/["&'<=>]/g, (c) => `&#${c.charCodeAt(0)};`);

/** The dashboard's contacts pages: list and search, a contact's page, edit, delete, export, CSV imports. */
describe('the dashboard: contacts', () => {
  let h: ApiHarness;
  let blobDir: string;
  const person = () => `${unique('person').toLowerCase()}@example.com`;
  const signIn = async (orgId = h.workspace.org.id) => (await signedInPerson(h.stack.orm, h.api.url, orgId, { email: person() })).client;

  async function addContact(
    orgId: string,
    fields: Partial<Pick<Contact, 'firstName' | 'lastName' | 'tags' | 'status' | 'customFields'>> & { email?: string } = {},
  ) {
    const em = scopeToOrg(h.stack.orm.em.fork(), orgId);
    const contact = em.create(Contact, {
      orgId,
      email: fields.email ?? `${unique('c').toLowerCase()}@example.org`,
      firstName: fields.firstName ?? '',
      lastName: fields.lastName ?? '',
      company: '',
      tags: fields.tags ?? [],
      customFields: fields.customFields ?? {},
      status: fields.status ?? 'active',
    });
    await em.flush();
    return contact;
  }

  /** Posts a multipart form with the page's CSRF fields and a CSV file, as a browser does. */
  async function upload(client: ReturnType<typeof dashboardClient>, csv: string, fields: { csrf?: string } = {}) {
    const page = await client.get('/dashboard/contacts/imports/new');
    const body = new FormData();
    body.set('_csrf', fields.csrf ?? csrfOf(page.text));
    body.set('_once', /name="_once" value="([^"]+)"/.exec(page.text)?.[1] ?? '');
    body.set('file', new Blob([csv], { type: 'text/csv' }), 'people.csv');
    const response = await fetch(`${h.api.url}/dashboard/contacts/imports`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: [...client.jar].map(([k, v]) => `${k}=${v}`).join('; ') },
      body,
    });
    return { status: response.status, headers: response.headers, text: await response.text() };
  }

  beforeAll(async () => {
    blobDir = await mkdtemp(join(tmpdir(), 'herald-dash-contacts-'));
    h = await startApiHarness({ BLOB_DIR: blobDir });
  });
  afterAll(async () => {
    await h?.close();
    await rm(blobDir, { recursive: true, force: true });
  });

  it('answers no contacts page or form without a session (303 to sign-in) and changes nothing', async () => {
    const contact = await addContact(h.workspace.org.id);
    const client = dashboardClient(h.api.url);
    for (const path of [
      '/dashboard/contacts',
      `/dashboard/contacts/${contact.id}`,
      '/dashboard/contacts/export.csv',
      '/dashboard/contacts/imports',
      '/dashboard/contacts/imports/new',
    ]) {
      const page = await client.get(path);
      expect(page.status, path).toBe(303);
      expect(page.headers.get('location'), path).toBe('/dashboard/sign-in');
    }
    for (const path of [`/dashboard/contacts/${contact.id}`, `/dashboard/contacts/${contact.id}/delete`]) {
      const posted = await client.post(path, { _csrf: 'x', first_name: 'Mallory' });
      expect(posted.status, path).toBe(303);
    }
    const still = await h.stack.orm.em.fork().findOne(Contact, { id: contact.id }, ALL_TENANTS);
    expect(still?.firstName).toBe('');
  });

  it('refuses every form without its CSRF token (403) and changes nothing', async () => {
    const contact = await addContact(h.workspace.org.id);
    const client = await signIn();
    await client.get('/dashboard/contacts');
    for (const path of [`/dashboard/contacts/${contact.id}`, `/dashboard/contacts/${contact.id}/delete`]) {
      const posted = await client.post(path, {
        _csrf: 'wrong',
        email: contact.email,
        first_name: 'Mallory',
        status: 'active',
        tags: '',
        custom_fields: '{}',
      });
      expect(posted.status, path).toBe(403);
    }
    const imported = await upload(client, 'email\nx@example.org\n', { csrf: 'wrong' });
    expect(imported.status).toBe(403);
    const still = await h.stack.orm.em.fork().findOne(Contact, { id: contact.id }, ALL_TENANTS);
    expect(still?.firstName).toBe('');
    expect(await h.stack.orm.em.fork().count(ContactImport, { orgId: h.workspace.org.id }, ALL_TENANTS)).toBe(0);
  });

  it("answers 404 for another workspace's contact and import, and changes neither", async () => {
    const { org } = await createOrg(h.stack.orm);
    const foreign = await addContact(org.id, { firstName: 'Foreign' });
    const em = scopeToOrg(h.stack.orm.em.fork(), org.id);
    const foreignImport = em.create(ContactImport, {
      orgId: org.id,
      segmentId: null,
      filename: 'theirs.csv',
      uploadExpiresAt: new Date(Date.now() + 60_000),
    });
    await em.flush();
    const client = await signIn();
    for (const path of [
      `/dashboard/contacts/${foreign.id}`,
      `/dashboard/contacts/imports/${foreignImport.id}`,
      `/dashboard/contacts/imports/${foreignImport.id}/errors.csv`,
      '/dashboard/contacts/not-an-id',
    ]) {
      const page = await client.get(path);
      expect(page.status, path).toBe(404);
      expect(page.text).not.toContain('Foreign');
    }
    const edit = await client.submit('/dashboard/contacts', `/dashboard/contacts/${foreign.id}`, {
      email: foreign.email,
      first_name: 'Mallory',
      last_name: '',
      company: '',
      tags: '',
      status: 'active',
      custom_fields: '{}',
    });
    expect(edit.status).toBe(404);
    const del = await client.submit('/dashboard/contacts', `/dashboard/contacts/${foreign.id}/delete`, {});
    expect(del.status).toBe(404);
    expect(await h.stack.orm.em.fork().findOne(Contact, { id: foreign.id }, ALL_TENANTS)).toMatchObject({ firstName: 'Foreign' });
  });

  it('lists, searches by a part of the email or name, filters by tag and status, and escapes HTML', async () => {
    const { org } = await createOrg(h.stack.orm);
    const hostile = '<script>alert("x")</script>';
    const ada = await addContact(org.id, {
      email: 'ada.lovelace@example.org',
      firstName: 'Ada',
      lastName: hostile,
      tags: ['vip', '<b>t</b>'],
    });
    const grace = await addContact(org.id, {
      email: 'grace@example.org',
      firstName: 'Grace',
      lastName: 'Hopper',
      tags: ['navy'],
      status: 'unsubscribed',
    });
    const client = await signIn(org.id);
    const all = await client.get('/dashboard/contacts');
    expect(all.status).toBe(200);
    expect(all.text).toContain('aria-current="page">Contacts<');
    expect(all.text).toContain(`href="/dashboard/contacts/${ada.id}">ada.lovelace@example.org</a>`);
    expect(all.text).toContain(`href="/dashboard/contacts/${grace.id}">grace@example.org</a>`);
    expect(all.text).not.toContain(hostile);
    expect(all.text).toContain(escaped(hostile));
    expect(all.text).toContain(`<code class="tag">${escaped('<b>t</b>')}</code>`);

    const byName = await client.get('/dashboard/contacts?q=HOPP');
    expect(byName.text).toContain('grace@example.org');
    expect(byName.text).not.toContain('ada.lovelace@example.org');
    const byEmail = await client.get('/dashboard/contacts?q=lovelace');
    expect(byEmail.text).toContain('ada.lovelace@example.org');
    expect(byEmail.text).not.toContain('grace@example.org');
    const byTag = await client.get('/dashboard/contacts?tag=navy');
    expect(byTag.text).toContain('grace@example.org');
    expect(byTag.text).not.toContain('ada.lovelace@example.org');
    const byStatus = await client.get('/dashboard/contacts?status=unsubscribed');
    expect(byStatus.text).toContain('grace@example.org');
    expect(byStatus.text).not.toContain('ada.lovelace@example.org');
    const wildcard = await client.get('/dashboard/contacts?q=%25%25%25');
    expect(wildcard.text).toContain('No contact matches.');

    for (const bad of ['q=ab', `q=${'x'.repeat(201)}`, `tag=${'t'.repeat(101)}`, 'status=gone']) {
      const refused = await client.get(`/dashboard/contacts?${bad}`);
      expect(refused.status, bad).toBe(400);
      expect(refused.text).toContain('role="alert"');
    }
  });

  it('pages with keyset links, and says what to do when the workspace has no contact', async () => {
    const { org } = await createOrg(h.stack.orm);
    const client = await signIn(org.id);
    const empty = await client.get('/dashboard/contacts');
    expect(empty.text).toContain('No contacts yet.');
    expect(empty.text).toContain('href="/dashboard/contacts/imports/new"');
    const em = scopeToOrg(h.stack.orm.em.fork(), org.id);
    const base = Date.now() - 100_000;
    for (let i = 0; i < 55; i += 1) {
      em.create(Contact, {
        orgId: org.id,
        email: `p${i}@example.org`,
        tags: [],
        customFields: {},
        createdAt: new Date(base + i * 1000),
        updatedAt: new Date(),
      });
    }
    await em.flush();
    const first = await client.get('/dashboard/contacts');
    expect(first.text).toContain('p54@example.org');
    expect(first.text).not.toContain('>p4@example.org<');
    const older = /href="(\/dashboard\/contacts\?older[^"]+)" rel="next"/.exec(first.text)?.[1];
    expect(older).toBeDefined();
    const second = await client.get(decodeEntities(older!));
    expect(second.text).toContain('>p4@example.org<');
    expect(second.text).toContain('>p0@example.org<');
    expect(second.text).not.toContain('p54@example.org');
  });

  it("shows a contact's fields, segments and timeline, saves an edit through the API's rules, and deletes after confirming", async () => {
    const contact = await addContact(h.workspace.org.id, { firstName: 'Edit', tags: ['a'], customFields: { plan: '<i>pro</i>' } });
    const client = await signIn();
    const page = await client.get(`/dashboard/contacts/${contact.id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(escaped('"<i>pro</i>"'));
    expect(page.text).toContain('Nothing yet');
    expect(page.text).toContain(`data-confirm="Delete ${contact.email}? This cannot be undone."`);
    const fields = {
      email: contact.email,
      first_name: 'Edited',
      last_name: 'Name',
      company: 'Acme',
      tags: 'a, b',
      status: 'active',
      custom_fields: '{"plan":"team"}',
    };
    const saved = await client.submit(`/dashboard/contacts/${contact.id}`, `/dashboard/contacts/${contact.id}`, fields);
    expect(saved.status, saved.text.slice(0, 300)).toBe(303);
    const row = await h.stack.orm.em.fork().findOneOrFail(Contact, { id: contact.id }, ALL_TENANTS);
    expect(row).toMatchObject({ firstName: 'Edited', lastName: 'Name', company: 'Acme', tags: ['a', 'b'], customFields: { plan: 'team' } });

    for (const [field, value] of [
      ['first_name', 'x'.repeat(201)],
      ['tags', Array.from({ length: 101 }, (_, i) => `t${i}`).join(',')],
      ['custom_fields', '[1'],
      ['email', 'not-an-email'],
    ] as const) {
      const refused = await client.submit(`/dashboard/contacts/${contact.id}`, `/dashboard/contacts/${contact.id}`, {
        ...fields,
        [field]: value,
      });
      expect(refused.status, field).toBe(400);
      expect(refused.text).toContain('role="alert"');
    }
    const other = await addContact(h.workspace.org.id);
    const taken = await client.submit(`/dashboard/contacts/${contact.id}`, `/dashboard/contacts/${contact.id}`, {
      ...fields,
      email: other.email,
    });
    expect(taken.status).toBe(409);

    const deleted = await client.submit(`/dashboard/contacts/${contact.id}`, `/dashboard/contacts/${contact.id}/delete`, {});
    expect(deleted.status).toBe(303);
    expect(deleted.headers.get('location')).toBe('/dashboard/contacts?deleted=1');
    expect(await h.stack.orm.em.fork().findOne(Contact, { id: contact.id }, ALL_TENANTS)).toBeNull();
  });

  it('downloads the CSV export with formulas escaped', async () => {
    const { org } = await createOrg(h.stack.orm);
    await addContact(org.id, { email: 'csv@example.org', firstName: '=HYPERLINK("x")' });
    const client = await signIn(org.id);
    const csv = await client.get('/dashboard/contacts/export.csv');
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toContain('text/csv');
    expect(csv.headers.get('content-disposition')).toMatch(/^attachment; filename="contacts-/);
    expect(csv.text).toContain('csv@example.org');
    expect(csv.text).toContain(`"'=HYPERLINK(""x"")"`);
  });

  it('uploads a CSV as an import and shows its progress page, which reloads itself while the import runs', async () => {
    const client = await signIn();
    const empty = await client.get('/dashboard/contacts/imports');
    expect(empty.text).toContain('No imports yet.');
    const none = await upload(client, '');
    expect(none.status).toBe(400);
    expect(none.text).toContain('Choose a CSV file to import.');
    const started = await upload(client, 'email,first_name\nnew@example.org,New\n');
    expect(started.status, started.text.slice(0, 300)).toBe(303);
    const location = started.headers.get('location')!;
    expect(location).toMatch(/^\/dashboard\/contacts\/imports\/[a-f0-9]{24}$/);
    const row = await h.stack.orm.em.fork().findOneOrFail(ContactImport, { id: location.split('/').at(-1)! }, ALL_TENANTS);
    expect(row).toMatchObject({ orgId: h.workspace.org.id, filename: 'people.csv' });
    expect(['validating', 'importing', 'completed', 'failed']).toContain(row.status);
    const page = await client.get(location);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<progress id="import-progress"');
    if (row.status === 'validating' || row.status === 'importing') expect(page.headers.get('refresh')).toBe('2');
    const list = await client.get('/dashboard/contacts/imports');
    expect(list.text).toContain(`href="${location}">people.csv</a>`);
  });

  it("shows on a contact's timeline the imports that touched it, with what each did, escaped and linked", async () => {
    const contact = await addContact(h.workspace.org.id);
    const em = scopeToOrg(h.stack.orm.em.fork(), h.workspace.org.id);
    const done = em.create(ContactImport, {
      orgId: h.workspace.org.id,
      status: 'completed',
      filename: '<b>spring</b>.csv',
      uploadExpiresAt: new Date(),
    });
    await em.flush();
    em.create(ContactImportMember, {
      orgId: h.workspace.org.id,
      contactId: contact.id,
      importId: done.id,
      outcome: 'updated',
      createdAt: new Date(),
    });
    await em.flush();
    const page = await (await signIn()).get(`/dashboard/contacts/${contact.id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Import: updated');
    expect(page.text).toContain(`href="/dashboard/contacts/imports/${done.id}">${escaped('<b>spring</b>.csv')}</a>`);
    expect(page.text).not.toContain('<b>spring</b>');
  });
});
