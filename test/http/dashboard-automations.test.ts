import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Automation, AutomationRun, Template, type Domain } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { createAutomationAuthoring } from '../../src/modules/automations/automation-authoring.ts';
import { parseDefinition } from '../../src/modules/automations/automation-definition.ts';
import { createAutomationsAdmin } from '../../src/modules/automations/automations.admin.ts';
import { createAutomationsService } from '../../src/modules/automations/automations.service.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { insertContact, insertRun, insertRunStep, insertStatShard } from '../support/automation-rows.ts';
import { addPublishedTemplate } from '../support/automations.ts';
import { csrfOf, decodeEntities, signedInPerson, type PageResponse } from '../support/dashboard-client.ts';
import { createOrg, unique } from '../support/factories.ts';
import { formFields, withFields } from '../support/html-form.ts';
import { addSendingDomain } from '../support/sending.ts';

type Client = Awaited<ReturnType<typeof signedInPerson>>['client'];

/** Repeated names as arrays, the first appearance's order kept: how the test client posts a form. */
function asForm(pairs: readonly (readonly [string, string])[]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of pairs) {
    const existing = out[name];
    out[name] = existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value];
  }
  return out;
}

/** The id in a redirect to an automation's page. */
const createdId = (response: PageResponse) =>
  /^\/dashboard\/automations\/([0-9a-f]{24})\?created=1$/.exec(response.headers.get('location') ?? '')?.[1];

/** A page's text as a person reads it: tags out, entities decoded. */
const plain = (text: string) => decodeEntities(text.replace(/<[^>]*>/g, ''));

describe("the dashboard's automations pages", () => {
  let h: ApiHarness;
  let orgId: string;
  let domain: Domain;
  let template: Template;
  let reminder: Template;
  const authoring = () => createAutomationAuthoring({ orm: h.stack.orm });
  const row = (id: string, org = orgId) => scopeToOrg(h.stack.orm.em, org).findOneOrFail(Automation, { id });
  const person = (role: 'owner' | 'member' = 'owner') =>
    signedInPerson(h.stack.orm, h.api.url, orgId, { email: `${unique('person').toLowerCase()}@example.com`, role });

  /** A definition with no reference to check: tag, then exit. */
  const simple = (tag = 'trial') => ({
    trigger: { type: 'tag.added', tag },
    start: 'tag',
    steps: [
      { id: 'tag', type: 'update_contact', add_tags: ['in-trial'], next: 'done' },
      { id: 'done', type: 'exit' },
    ],
  });

  /** The welcome series: send, wait, was it opened? yes: exit, no: a reminder. */
  const welcome = (wait = '2d') => ({
    trigger: { type: 'contact.created' },
    start: 'welcome',
    steps: [
      { id: 'welcome', type: 'send_email', template_id: template.id, from: `hello@${domain.domain}`, next: 'wait' },
      { id: 'wait', type: 'wait', duration: wait, next: 'check' },
      { id: 'check', type: 'condition', if: { email: 'opened', step: 'welcome' }, yes: 'done', no: 'reminder' },
      { id: 'reminder', type: 'send_email', template_id: reminder.id, from: `hello@${domain.domain}`, next: 'done' },
      { id: 'done', type: 'exit' },
    ],
  });

  /** Creates an automation from the new page's JSON view alone (as without JavaScript); its id. */
  async function createThroughPage(client: Client, definition: unknown, name = unique('Welcome series')): Promise<string> {
    const response = await client.submit('/dashboard/automations/new', '/dashboard/automations/new', {
      name,
      description: 'Greets new contacts.',
      definition: JSON.stringify(definition),
      action: 'publish',
    });
    expect(response.status, response.text.slice(0, 2000)).toBe(303);
    return createdId(response)!;
  }

  /** A published template of the workspace named `name` (the builder lists templates by name). */
  async function namedTemplate(name: string): Promise<Template> {
    const template = await addPublishedTemplate(h.stack.orm, orgId, { subject: `${name}: welcome aboard`, html: '<p>Welcome aboard.</p>' });
    await scopeToOrg(h.stack.orm.em.fork(), orgId).nativeUpdate(Template, { id: template.id }, { name });
    return template;
  }

  beforeAll(async () => {
    h = await startApiHarness();
    orgId = h.workspace.org.id;
    domain = await addSendingDomain(h.stack.orm, orgId);
    template = await namedTemplate('Welcome email');
    reminder = await namedTemplate('Reminder email');
  });
  afterAll(() => h.close());

  it('answers no page without a session (303 to sign-in) and changes nothing', async () => {
    const automation = await authoring().create(orgId, { name: unique('Quiet'), definition: simple() });
    const { client } = await person();
    const anonymous = (await import('../support/dashboard-client.ts')).dashboardClient(h.api.url);
    for (const path of [
      '/dashboard/automations',
      '/dashboard/automations/new',
      `/dashboard/automations/${automation.id}`,
      `/dashboard/automations/${automation.id}/runs`,
      `/dashboard/automations/${automation.id}/archive`,
    ]) {
      const page = await anonymous.get(path);
      expect(page.status, path).toBe(303);
      expect(page.headers.get('location'), path).toBe('/dashboard/sign-in');
    }
    const token = csrfOf((await client.get('/dashboard/automations')).text);
    for (const [path, fields] of [
      ['/dashboard/automations/new', { name: 'x', definition: JSON.stringify(simple()), action: 'publish' }],
      [`/dashboard/automations/${automation.id}/status`, { to: 'active' }],
      [`/dashboard/automations/${automation.id}/archive`, {}],
    ] as const) {
      expect((await anonymous.post(path, { _csrf: token, ...fields })).status, path).toBe(303);
    }
    expect(await row(automation.id)).toMatchObject({ status: 'draft', version: 1 });
  });

  it("lists the workspace's automations with status, trigger, version and the six counters summed over their shards; not another workspace's", async () => {
    const counted = await authoring().create(orgId, { name: unique('Counted'), definition: simple('counted') });
    await createAutomationsService({ orm: h.stack.orm }).updateAutomation(orgId, counted.id, { status: 'active' });
    await insertStatShard(h.stack.orm, orgId, counted.id, 0, {
      total_runs: 5,
      active_runs: 2,
      completed_runs: 2,
      failed_runs: 1,
      emails_sent: 7,
      credits_used: 7,
    });
    await insertStatShard(h.stack.orm, orgId, counted.id, 3, {
      total_runs: 1234,
      active_runs: 1,
      completed_runs: 1233,
      emails_sent: 6,
      credits_used: 6,
    });
    const idle = await authoring().create(orgId, { name: unique('Idle') });
    const { org: other } = await createOrg(h.stack.orm);
    const foreign = await authoring().create(other.id, { name: unique('Foreign'), definition: simple() });
    await insertStatShard(h.stack.orm, other.id, foreign.id, 0, { total_runs: 99 });

    const { client } = await person('member');
    const page = await client.get('/dashboard/automations');
    expect(page.status).toBe(200);
    expect(page.text).toContain('aria-current="page">Automations');
    expect(page.text).toContain('href="/dashboard/automations/new">New automation</a>');
    const rowOf = (id: string) => {
      const start = page.text.indexOf(`href="/dashboard/automations/${id}"`);
      expect(start, id).toBeGreaterThan(0);
      return page.text.slice(start, page.text.indexOf('</tr>', start));
    };
    const cells = rowOf(counted.id);
    expect(cells).toContain(counted.name);
    expect(cells).toContain('class="state active"');
    expect(cells).toContain('<code>tag.added: counted</code>');
    expect(cells).toContain('data-label="Version">2<');
    for (const [label, value] of [
      ['Total runs', '1,239'],
      ['Active runs', '3'],
      ['Completed', '1,235'],
      ['Failed', '1'],
      ['Emails sent', '13'],
      ['Credits used', '13'],
    ])
      expect(cells, label).toContain(`data-label="${label}" class="number">${value}<`);
    const idleCells = rowOf(idle.id);
    expect(idleCells).toContain('class="state draft"');
    expect(idleCells).toContain('<code>none</code>');
    expect(idleCells).toContain('data-label="Total runs" class="number">0<');
    expect(page.text).not.toContain(foreign.name);
    expect(page.text).not.toContain(foreign.id);

    // The automation's page shows the same counters.
    const own = await client.get(`/dashboard/automations/${counted.id}`);
    expect(own.text).toContain('<span class="tile-label">Total runs</span> <strong>1,239</strong>');
    expect(own.text).toContain('<span class="tile-label">Emails sent</span> <strong>13</strong>');
  });

  it('creates an automation from the JSON view alone: a draft with its definition published as version 1, shown in the builder', async () => {
    const { client } = await person();
    const name = unique('Welcome <series> & "co"');
    const id = await createThroughPage(client, welcome(), name);
    expect(await row(id)).toMatchObject({
      name,
      status: 'draft',
      version: 1,
      triggerType: 'contact.created',
      description: 'Greets new contacts.',
    });
    const published = await authoring().definition(orgId, id);
    const expected = parseDefinition(welcome());
    expect(expected.ok).toBe(true);
    expect(published).toEqual({ version: 1, definition: expected.ok ? expected.definition : null });

    const page = await client.get(`/dashboard/automations/${id}?created=1`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('its definition published as version 1');
    expect(page.text).not.toContain('<series>');
    expect(page.text).toContain('Welcome &#60;series&#62; &#38; &#34;co&#34;');
    // The builder: each step a card in the flow, the condition's branches labelled.
    for (const [stepId, type] of [
      ['welcome', 'send_email'],
      ['wait', 'wait'],
      ['check', 'condition'],
      ['reminder', 'send_email'],
      ['done', 'exit'],
    ])
      expect(page.text, stepId).toContain(`aria-label="Step ${stepId} (${type})"`);
    expect(page.text).toContain('<span class="branch-name">yes</span>');
    expect(page.text).toContain('<span class="branch-name">no</span>');
    expect(page.text).toContain(`<option value="${template.id}" selected>Welcome email</option>`);
    expect(page.text).toContain('<script src="/dashboard/assets/automation-builder.js" defer></script>');
    // The JSON view: the same definition.
    const fields = formFields(page.text);
    const json = fields.find(([name]) => name === 'definition')![1];
    expect(JSON.parse(json)).toEqual(published!.definition);
    expect(fields.find(([name]) => name === 'base')![1]).toBe(json);

    const unnamed = await client.submit('/dashboard/automations/new', '/dashboard/automations/new', {
      name: ' ',
      definition: JSON.stringify(welcome()),
      action: 'publish',
    });
    expect(unnamed.status).toBe(400);
    expect(unnamed.text).toContain('Give the automation a name');
  });

  it('validates: every problem with its path, "valid" for a valid definition; nothing is saved', async () => {
    const { client } = await person();
    const before = await scopeToOrg(h.stack.orm.em, orgId).count(Automation, {});
    const validate = (definition: string) =>
      client.submit('/dashboard/automations/new', '/dashboard/automations/new', { name: 'Checked', definition, action: 'validate' });

    const shape = welcome('2 weeks') as Record<string, unknown>;
    shape.timezone = 'Mars/Olympus';
    const refused = await validate(JSON.stringify(shape));
    expect(refused.status).toBe(400);
    expect(refused.text).toMatch(/<h2 id="problems-title">\d+ problems<\/h2>/);
    expect(refused.text).toContain('<a href="#step-1"><code>steps.1.duration</code></a> must be a number and a unit');
    expect(refused.text).toContain('<a href="#trigger"><code>timezone</code></a> must be an IANA time zone');
    // Also beside the field, in its card.
    expect(refused.text).toMatch(/id="step-1"[\s\S]*<ul class="problems"><li><code>steps\.1\.duration<\/code>/);

    const references = welcome() as { steps: Record<string, unknown>[] };
    references.steps[0] = { ...references.steps[0], template_id: 'f'.repeat(24), from: 'hello@unverified.example' };
    const unknown = await validate(JSON.stringify(references));
    expect(unknown.status).toBe(400);
    expect(plain(unknown.text)).toContain(`steps.0.template_id template ${'f'.repeat(24)} does not exist in this workspace`);
    expect(plain(unknown.text)).toContain('steps.0.from unverified.example is not a sending domain of this workspace');

    const broken = await validate('{"trigger": ');
    expect(broken.status).toBe(400);
    expect(broken.text).toContain('<code>(definition)</code></a> is not valid JSON');
    expect(formFields(broken.text).find(([name]) => name === 'definition')![1]).toBe('{"trigger": ');

    const valid = await validate(JSON.stringify(welcome()));
    expect(valid.status).toBe(200);
    expect(valid.text).toContain('The definition is valid.');
    expect(await scopeToOrg(h.stack.orm.em, orgId).count(Automation, {})).toBe(before);
  });

  it("publishes a new version from the automation's page; a refused definition changes nothing", async () => {
    const { client } = await person();
    const id = await createThroughPage(client, welcome());
    const pagePath = `/dashboard/automations/${id}`;
    expect((await client.get(pagePath)).text).toContain('Publish as version 2');

    const published = await client.submit(pagePath, pagePath, {
      name: 'Renamed series',
      description: 'Greets new contacts.',
      definition: JSON.stringify(welcome('3d')),
      action: 'publish',
    });
    expect(published.status, published.text.slice(0, 2000)).toBe(303);
    expect(published.headers.get('location')).toBe(`${pagePath}?published=2`);
    const after = await row(id);
    expect(after.name).toBe('Renamed series');
    expect(after.version).toBe(3);
    const definition = await authoring().definition(orgId, id);
    expect(definition?.version).toBe(2);
    expect(definition?.definition.steps[1]).toEqual({ id: 'wait', type: 'wait', duration: '3d', next: 'check' });
    const page = await client.get(`${pagePath}?published=2`);
    expect(page.text).toContain('Published as version 2');
    expect(page.text).toContain('published at version 2');
    expect(page.text).toContain('Publish as version 4');

    const refused = await client.submit(pagePath, pagePath, {
      name: 'Renamed series',
      description: '',
      definition: JSON.stringify({ ...welcome(), start: 'nowhere' }),
      action: 'publish',
    });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('<code>start</code></a> there is no step &#34;nowhere&#34;');
    expect((await row(id)).version).toBe(3);
    expect((await authoring().definition(orgId, id))?.version).toBe(2);

    const saved = await client.submit(pagePath, pagePath, {
      name: 'Renamed again',
      description: 'Only the name.',
      definition: JSON.stringify(welcome('3d')),
      action: 'details',
    });
    expect(saved.status).toBe(200);
    expect(saved.text).toContain('Name and description saved.');
    expect(await row(id)).toMatchObject({ name: 'Renamed again', description: 'Only the name.', version: 4 });
    expect((await authoring().definition(orgId, id))?.version).toBe(2);
  });

  it('activates, pauses, resumes and archives through the automations service; only owners switch one on', async () => {
    const { client: owner } = await person('owner');
    const { client: member } = await person('member');
    const id = await createThroughPage(owner, welcome());
    const pagePath = `/dashboard/automations/${id}`;
    const status = (client: Client, to: string) => client.submit(pagePath, `${pagePath}/status`, { to });

    const memberPage = await member.get(pagePath);
    expect(memberPage.text).not.toContain('>Activate</button>');
    expect(memberPage.text).toContain('Only an owner can activate or resume');
    const refused = await status(member, 'active');
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('Only an owner can activate or resume');
    expect((await row(id)).status).toBe('draft');

    expect((await owner.get(pagePath)).text).toContain('>Activate</button>');
    const activated = await status(owner, 'active');
    expect(activated.status).toBe(303);
    expect(activated.headers.get('location')).toBe(`${pagePath}?changed=active`);
    expect(await row(id)).toMatchObject({ status: 'active', version: 2 });
    const active = await owner.get(`${pagePath}?changed=active`);
    expect(active.text).toContain('Active: contacts that match the trigger enter it from now on.');
    expect(active.text).toContain('>Pause</button>');
    expect((await status(owner, 'active')).status).toBe(409);

    // A member may stop it, not publish to it while it is on.
    const publishing = await member.submit(pagePath, pagePath, { name: 'x', definition: JSON.stringify(welcome('1d')), action: 'publish' });
    expect(publishing.status).toBe(403);
    expect((await status(member, 'paused')).status).toBe(303);
    expect((await row(id)).status).toBe('paused');
    expect((await status(member, 'active')).status).toBe(403);
    expect((await owner.get(pagePath)).text).toContain('>Resume</button>');
    expect((await status(owner, 'active')).status).toBe(303);
    expect((await row(id)).status).toBe('active');

    // Archiving asks first, saying the open runs end.
    const contact = await insertContact(h.stack.orm, orgId);
    const automation = await row(id);
    for (const runStatus of ['active', 'active', 'completed'] as const)
      await insertRun(h.stack.orm, orgId, automation, { contactId: contact.id, status: runStatus });
    const confirm = await member.get(`${pagePath}/archive`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('its 2 open runs end where they are');
    expect(confirm.text).toContain('Archive and end 2 open runs</button>');
    const archived = await member.submit(`${pagePath}/archive`, `${pagePath}/archive`, {});
    expect(archived.status).toBe(303);
    expect(archived.headers.get('location')).toBe(`${pagePath}?archived=1`);
    expect((await row(id)).status).toBe('archived');
    // As the page said: the open runs ended (the automations service ends them with the archive).
    const left = await scopeToOrg(h.stack.orm.em, orgId).find(AutomationRun, { automationId: id });
    expect(left.map((run) => run.status).sort()).toEqual(['completed', 'exited', 'exited']);
    const archivedPage = await owner.get(`${pagePath}?archived=1`);
    expect(archivedPage.text).toContain('Archived: no one enters it and its open runs end.');
    expect(archivedPage.text).not.toContain('>Activate</button>');
    expect(archivedPage.text).not.toContain('Publish as version');
    expect((await status(owner, 'active')).status).toBe(409);
    const edit = await owner.submit(pagePath, pagePath, { name: 'x', definition: JSON.stringify(welcome()), action: 'publish' });
    expect(edit.status).toBe(409);
    expect((await row(id)).status).toBe('archived');

    // Nothing to run without a published definition.
    const bare = await createAutomationsAdmin({ orm: h.stack.orm }).createAutomation({ orgId, name: unique('Bare') });
    const nothing = await owner.submit(`/dashboard/automations/${bare.id}`, `/dashboard/automations/${bare.id}/status`, { to: 'active' });
    expect(nothing.status).toBe(409);
    expect(nothing.text).toContain('Publish a definition first');
    expect((await row(bare.id)).status).toBe('draft');
  });

  it("lists an automation's runs newest first, filtered by status and paged; shows one run's timeline in order", async () => {
    const automation = await authoring().create(orgId, { name: unique('Ran'), definition: welcome() });
    const contact = await insertContact(h.stack.orm, orgId);
    const base = Date.now() - 3_600_000;
    const runs = [];
    for (let i = 0; i < 51; i += 1)
      runs.push(
        await insertRun(h.stack.orm, orgId, automation, {
          contactId: contact.id,
          status: i === 0 ? 'failed' : i % 2 === 0 ? 'completed' : 'active',
          stepId: i % 2 === 0 ? null : 'wait',
          ...(i === 0 ? { error: 'template <b>gone</b>' } : {}),
          createdAt: new Date(base + i * 1000),
        }),
      );
    const other = await authoring().create(orgId, { name: unique('Other'), definition: simple() });
    const elsewhere = await insertRun(h.stack.orm, orgId, other, { contactId: contact.id });
    const { client } = await person('member');
    const path = `/dashboard/automations/${automation.id}/runs`;

    const first = await client.get(path);
    expect(first.status).toBe(200);
    expect(first.text).toContain('<label for="status">Status</label>');
    expect(first.text).toContain(contact.email);
    expect(first.text.indexOf(runs[50]!.id)).toBeLessThan(first.text.indexOf(runs[49]!.id));
    expect(first.text).not.toContain(runs[0]!.id);
    expect(first.text).not.toContain(elsewhere.id);
    expect(first.text).toContain('data-label="Version">1<');
    const next = /href="([^"]+)" rel="next">Older runs/.exec(first.text)?.[1];
    expect(next).toBeDefined();
    const second = await client.get(decodeEntities(next!));
    expect(second.text).toContain(runs[0]!.id);
    expect(second.text).not.toContain(runs[1]!.id);
    expect(second.text).not.toContain('rel="next"');
    expect(second.text).toContain('template &#60;b&#62;gone&#60;/b&#62;');

    const failed = await client.get(`${path}?status=failed`);
    expect(failed.text).toContain(runs[0]!.id);
    expect(failed.text).not.toContain(runs[1]!.id);
    expect(failed.text).toContain('<option value="failed" selected>');
    expect((await client.get(`${path}?status=exited`)).text).toContain('No runs with status exited.');

    const run = runs[1]!;
    const entries = [
      { stepId: 'welcome', kind: 'send_email', outcome: 'sent', detail: { email_id: 'e1', subject: '<b>Hi</b>' } },
      { stepId: 'wait', kind: 'wait', outcome: 'waiting', detail: { until: '2026-12-01T10:00:00Z' } },
      { stepId: 'check', kind: 'condition', outcome: 'branched', detail: { branch: 'no' } },
    ];
    for (const [i, entry] of entries.entries())
      await insertRunStep(h.stack.orm, orgId, run.id, { ...entry, createdAt: new Date(base + i * 1000) });
    const timeline = await client.get(`${path}/${run.id}`);
    expect(timeline.status).toBe(200);
    expect(timeline.text).toContain(contact.email);
    const order = ['sent', 'waiting', 'branched'].map((outcome) => timeline.text.indexOf(`<span class="outcome ${outcome}">`));
    expect(order.every((at) => at > 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(timeline.text).toContain('<dt>subject</dt><dd><code>&#60;b&#62;Hi&#60;/b&#62;</code></dd>');
    expect(timeline.text).toContain('<dt>branch</dt><dd><code>no</code></dd>');
    expect(timeline.text).toMatch(/<th scope="row" data-label="Step"><code>check<\/code><\/th>\s*<td data-label="Kind">condition<\/td>/);
    // A run of another automation is not one of this automation's.
    expect((await client.get(`${path}/${elsewhere.id}`)).status).toBe(404);
    expect((await client.get(`${path}/not-an-id`)).status).toBe(404);
  });

  it("keeps workspaces apart: another workspace's automation is 404 and is neither changed nor shown", async () => {
    const { org: other } = await createOrg(h.stack.orm);
    const foreign = await authoring().create(other.id, { name: unique('Theirs'), definition: simple() });
    const run = await insertRun(h.stack.orm, other.id, foreign);
    const { client } = await person();
    const base = `/dashboard/automations/${foreign.id}`;
    for (const path of [base, `${base}/runs`, `${base}/runs/${run.id}`, `${base}/archive`, '/dashboard/automations/not-an-id'])
      expect((await client.get(path)).status, path).toBe(404);
    for (const [path, fields] of [
      [base, { name: 'Mine now', definition: JSON.stringify(simple()), action: 'publish' }],
      [base, { name: 'Mine now', definition: JSON.stringify(simple()), action: 'details' }],
      [`${base}/status`, { to: 'active' }],
      [`${base}/archive`, {}],
    ] as const) {
      expect((await client.submit('/dashboard/automations', path, fields)).status, path).toBe(404);
    }
    expect(await row(foreign.id, other.id)).toMatchObject({ status: 'draft', version: 1, name: foreign.name });
  });

  it("needs the session's CSRF token and this origin for every form", async () => {
    const { client } = await person();
    const id = await createThroughPage(client, simple());
    const pagePath = `/dashboard/automations/${id}`;
    const attempts = [
      [pagePath, { name: 'Forged', definition: JSON.stringify(simple('forged')), action: 'publish' }],
      ['/dashboard/automations/new', { name: 'Forged', definition: JSON.stringify(simple('forged')), action: 'publish' }],
      [`${pagePath}/status`, { to: 'active' }],
      [`${pagePath}/archive`, {}],
    ] as const;
    const before = await scopeToOrg(h.stack.orm.em, orgId).count(Automation, {});
    for (const [action, fields] of attempts) {
      expect((await client.post(action, fields)).status, action).toBe(403);
      expect((await client.post(action, { ...fields, _csrf: 'forged' })).status, action).toBe(403);
      expect((await client.submit(pagePath, action, fields, { origin: 'https://evil.example' })).status, action).toBe(403);
    }
    expect(await row(id)).toMatchObject({ status: 'draft', version: 1 });
    expect(await scopeToOrg(h.stack.orm.em, orgId).count(Automation, {})).toBe(before);
  });

  it('builds a definition with the builder alone, as a browser without JavaScript: add, fill in, remove, publish', async () => {
    const { client } = await person();
    const newPath = '/dashboard/automations/new';
    const start = await client.get(newPath);
    let fields = formFields(start.text);
    // The starter: contact.created, one send step to fill in.
    expect(fields).toContainEqual(['d.trigger.type', 'contact.created']);
    expect(fields).toContainEqual(['d.steps.0.id', 'send-1']);
    const post = async (changes: Record<string, string>, status = 200) => {
      const response = await client.post(newPath, asForm(withFields(fields, changes)));
      expect(response.status, response.text.slice(0, 3000)).toBe(status);
      // The page again (with a new `_once`), unless it went on elsewhere.
      if (status !== 303) fields = formFields(response.text);
      return response;
    };
    const from = `hello@${domain.domain}`;
    await post({ 'd.steps.0.template_id': template.id, 'd.steps.0.from': from, add_type: 'wait', add_slot: '0.next', action: 'add' });
    expect(fields).toContainEqual(['d.steps.1.id', 'wait-1']);
    expect(fields).toContainEqual(['d.steps.0.next', 'wait-1']);
    // The new step's own next is where the next one goes.
    expect(fields).toContainEqual(['add_slot', '1.next']);
    await post({ 'd.steps.1.duration': '2s', add_type: 'condition', action: 'add' });
    expect(fields).toContainEqual(['k.steps.2.if', 'email']);
    expect(fields).toContainEqual(['d.steps.2.if.step@k.steps.2.if=email', 'send-1']);
    await post({ add_type: 'exit', add_slot: '2.yes', action: 'add' });
    await post({ add_type: 'send_email', add_slot: '2.no', action: 'add' });
    // Each new step goes right after the step it follows: send-2 is the fourth, before exit-1.
    expect(fields).toContainEqual(['d.steps.3.id', 'send-2']);
    await post({ add_type: 'webhook', add_slot: '3.next', action: 'add' });
    expect(fields).toContainEqual(['d.steps.3.next', 'webhook-1']);
    const removed = await post({ 'd.steps.3.template_id': reminder.id, 'd.steps.3.from': from, action: 'remove:4' });
    expect(removed.text).toContain('Step removed.');
    expect(removed.text).not.toContain('webhook-1');
    const nowhere = await post({ add_type: 'wait', add_slot: '4.next', action: 'add' }, 400);
    expect(nowhere.text).toContain('Choose where the new step goes.');
    const valid = await post({ action: 'validate' });
    expect(valid.text).toContain('The definition is valid.');
    // Choosing another trigger type: its field counts, the others' do not.
    await post({
      'd.trigger.type': 'tag.added',
      'd.trigger.tag@d.trigger.type=tag.added': 'vip',
      'd.trigger.name@d.trigger.type=event': 'x',
      action: 'refresh',
    });
    expect((JSON.parse(fields.find(([name]) => name === 'definition')![1]) as { trigger: unknown }).trigger).toEqual({
      type: 'tag.added',
      tag: 'vip',
    });

    const created = await post({ name: 'Built without script', action: 'publish' }, 303);
    const id = createdId(created)!;
    expect((await authoring().definition(orgId, id))?.definition).toEqual({
      trigger: { type: 'tag.added', tag: 'vip' },
      reentry: { mode: 'once' },
      timezone: 'UTC',
      start: 'send-1',
      steps: [
        { id: 'send-1', type: 'send_email', template_id: template.id, from, next: 'wait-1' },
        { id: 'wait-1', type: 'wait', duration: '2s', next: 'check-1' },
        { id: 'check-1', type: 'condition', if: { email: 'opened', step: 'send-1' }, yes: 'exit-1', no: 'send-2' },
        { id: 'send-2', type: 'send_email', template_id: reminder.id, from },
        { id: 'exit-1', type: 'exit' },
      ],
    });
  });

  it('takes the JSON view when it was changed, even if the builder was too, and draws the builder from it', async () => {
    const { client } = await person();
    const newPath = '/dashboard/automations/new';
    const fields = formFields((await client.get(newPath)).text);
    const edited = withFields(fields, {
      'd.trigger.type': 'event',
      'd.trigger.name@d.trigger.type=event': 'from.builder',
      definition: JSON.stringify(simple('from-json')),
      action: 'refresh',
    });
    const page = await client.post(newPath, asForm(edited));
    expect(page.status).toBe(200);
    const drawn = formFields(page.text);
    expect(drawn).toContainEqual(['d.trigger.type', 'tag.added']);
    expect(drawn).toContainEqual(['d.trigger.tag@d.trigger.type=tag.added', 'from-json']);
    expect(drawn).toContainEqual(['d.steps.0.add_tags~list', 'in-trial']);
    expect(page.text).toContain('aria-label="Step tag (update_contact)"');
  });
});
