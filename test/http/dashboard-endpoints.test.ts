import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Event, WebhookDelivery, WebhookEndpoint } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { WEBHOOK_LIMITS } from '../../src/modules/webhooks/webhooks.schemas.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { dashboardClient, signedInPerson } from '../support/dashboard-client.ts';
import { createOrg, unique } from '../support/factories.ts';
import { insertDelivery, insertEndpoint } from '../support/webhook-rows.ts';

/** Text as the pages' templates escape it (ghtml: " & ' < = > as numeric references). */
const escaped = (text: string) => text.replace(/["&'<=>]/g, (c) => `&#${c.charCodeAt(0)};`);

/** The dashboard's endpoint forms: add, edit, disable/enable, a test event, delete (through the webhooks service). */
describe('the dashboard: webhook endpoint forms', () => {
  let h: ApiHarness;
  const email = () => `${unique('person').toLowerCase()}@example.com`;
  const signIn = async (orgId = h.workspace.org.id, role: 'owner' | 'member' = 'member') =>
    (await signedInPerson(h.stack.orm, h.api.url, orgId, { email: email(), role })).client;
  const endpointsOf = (orgId: string) => scopeToOrg(h.stack.orm.em.fork(), orgId).find(WebhookEndpoint, {});
  const endpointRow = (orgId: string, id: string) => scopeToOrg(h.stack.orm.em.fork(), orgId).findOne(WebhookEndpoint, { id });

  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('answers no form without a session (303 to sign-in) and changes nothing', async () => {
    const endpoint = await insertEndpoint(h.stack.orm, h.workspace.org.id);
    const client = dashboardClient(h.api.url);
    for (const path of [
      '/dashboard/webhooks/new',
      `/dashboard/webhooks/${endpoint.id}/edit`,
      `/dashboard/webhooks/${endpoint.id}/delete`,
    ]) {
      const page = await client.get(path);
      expect(page.status, path).toBe(303);
      expect(page.headers.get('location'), path).toBe('/dashboard/sign-in');
    }
    for (const action of ['edit', 'disable', 'test', 'delete']) {
      const posted = await client.post(`/dashboard/webhooks/${endpoint.id}/${action}`, { _csrf: 'x', name: 'changed' });
      expect(posted.status, action).toBe(303);
    }
    expect(await endpointRow(h.workspace.org.id, endpoint.id)).toMatchObject({ name: endpoint.name, enabled: true });
  });

  it('refuses every form without its CSRF token (403) and changes nothing', async () => {
    const endpoint = await insertEndpoint(h.stack.orm, h.workspace.org.id);
    const client = await signIn();
    const before = (await endpointsOf(h.workspace.org.id)).length;
    const created = await client.post('/dashboard/webhooks', { _csrf: 'wrong', name: 'x', url: 'https://a.example.com/h', events: '*' });
    expect(created.status).toBe(403);
    for (const action of ['edit', 'disable', 'test', 'delete']) {
      const posted = await client.post(`/dashboard/webhooks/${endpoint.id}/${action}`, { _csrf: 'wrong', name: 'changed' });
      expect(posted.status, action).toBe(403);
    }
    expect(await endpointsOf(h.workspace.org.id)).toHaveLength(before);
    expect(await endpointRow(h.workspace.org.id, endpoint.id)).toMatchObject({ name: endpoint.name, enabled: true });
  });

  it('adds an endpoint from the events picker, shows its secret once and escapes its name', async () => {
    const { org } = await createOrg(h.stack.orm);
    const client = await signIn(org.id);
    const form = await client.get('/dashboard/webhooks/new');
    expect(form.status).toBe(200);
    expect(form.text).toContain(`maxlength="${WEBHOOK_LIMITS.url}"`);
    expect(form.text).toContain('value="email.delivered"');
    expect(form.text).not.toContain('value="webhook.test"');
    const name = '<img src=x onerror=alert(1)> Orders';
    const page = await client.submit('/dashboard/webhooks/new', '/dashboard/webhooks', {
      name,
      url: 'https://orders.example.com/hook',
      description: 'orders & more',
      events: ['email.delivered', 'email.bounced'],
    });
    expect(page.status, page.text).toBe(201);
    expect(page.text).toContain(escaped(name));
    expect(page.text).not.toContain('<img src=x');
    const [row] = await endpointsOf(org.id);
    expect(row).toMatchObject({
      name,
      url: 'https://orders.example.com/hook',
      events: ['email.delivered', 'email.bounced'],
      keyMode: 'test',
    });
    expect(page.text).toMatch(/<code id="new-secret">whsec_[\w+/&#;]+<\/code>/);
    const again = await client.get(`/dashboard/webhooks/${row!.id}`);
    expect(again.text).not.toContain('whsec_');
  });

  it.each([
    [{ name: '', url: 'https://a.example.com/h', events: '*' }, 'name: must not be empty'],
    [{ name: 'x', url: 'ftp://a.example.com/h', events: '*' }, 'url: must be an absolute http or https URL'],
    [{ name: 'x', url: `https://a.example.com/${'a'.repeat(WEBHOOK_LIMITS.url)}`, events: '*' }, 'url: Invalid length'],
    [{ name: 'x'.repeat(WEBHOOK_LIMITS.name + 1), url: 'https://a.example.com/h', events: '*' }, 'name: Invalid length'],
    [{ name: 'x', url: 'https://a.example.com/h' }, 'events: must list at least one event type'],
    [{ name: 'x', url: 'https://a.example.com/h', events: 'contact.renamed' }, 'unknown event type'],
    [{ name: 'x', url: 'https://user:pw@a.example.com/h', events: '*' }, 'url: must not contain credentials'],
  ])('refuses %j with the API rules and keeps what was typed', async (fields, problem) => {
    const { org } = await createOrg(h.stack.orm);
    const client = await signIn(org.id);
    const page = await client.submit('/dashboard/webhooks/new', '/dashboard/webhooks', fields);
    expect(page.status, page.text.slice(0, 2000)).toBe(400);
    expect(page.text).toContain(escaped(problem));
    expect(page.text).toContain('The endpoint was not saved');
    if (fields.name) expect(page.text).toContain(`value="${escaped(fields.name.slice(0, 50))}`);
    expect(await endpointsOf(org.id)).toHaveLength(0);
  });

  it("requires https of an owner's endpoint (a live caller) and accepts http from a member (test)", async () => {
    const { org } = await createOrg(h.stack.orm);
    const owner = await signIn(org.id, 'owner');
    const refused = await owner.submit('/dashboard/webhooks/new', '/dashboard/webhooks', {
      name: 'plain',
      url: 'http://plain.example.com/h',
      events: '*',
    });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('a live key may register only https URLs');
    const member = await signIn(org.id, 'member');
    const accepted = await member.submit('/dashboard/webhooks/new', '/dashboard/webhooks', {
      name: 'plain',
      url: 'http://plain.example.com/h',
      events: '*',
    });
    expect(accepted.status).toBe(201);
  });

  it('edits an endpoint, disables and enables it, with the form showing its values', async () => {
    const endpoint = await insertEndpoint(h.stack.orm, h.workspace.org.id, { events: ['contact.created'] });
    const client = await signIn();
    const form = await client.get(`/dashboard/webhooks/${endpoint.id}/edit`);
    expect(form.status).toBe(200);
    expect(form.text).toMatch(/value="contact\.created" checked/);
    const saved = await client.submit(`/dashboard/webhooks/${endpoint.id}/edit`, `/dashboard/webhooks/${endpoint.id}/edit`, {
      name: 'Renamed',
      url: 'https://renamed.example.com/hook',
      description: '',
      events: ['*'],
    });
    expect(saved.status, saved.text.slice(0, 1000)).toBe(303);
    expect(saved.headers.get('location')).toBe(`/dashboard/webhooks/${endpoint.id}?done=saved`);
    expect(await endpointRow(h.workspace.org.id, endpoint.id)).toMatchObject({
      name: 'Renamed',
      url: 'https://renamed.example.com/hook',
      events: ['*'],
    });
    const disabled = await client.submit(`/dashboard/webhooks/${endpoint.id}`, `/dashboard/webhooks/${endpoint.id}/disable`, {});
    expect(disabled.status).toBe(303);
    expect(await endpointRow(h.workspace.org.id, endpoint.id)).toMatchObject({ enabled: false });
    const page = await client.get(`/dashboard/webhooks/${endpoint.id}?done=disabled`);
    expect(page.text).toContain('<span class="state disabled">disabled</span>');
    expect(page.text).toContain(`action="/dashboard/webhooks/${endpoint.id}/enable"`);
    expect(page.text).not.toContain(`action="/dashboard/webhooks/${endpoint.id}/test"`);
    const refusedTest = await client.post(`/dashboard/webhooks/${endpoint.id}/test`, {
      _csrf: /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!,
    });
    expect(refusedTest.status).toBe(409);
    expect(await client.submit(`/dashboard/webhooks/${endpoint.id}`, `/dashboard/webhooks/${endpoint.id}/enable`, {})).toMatchObject({
      status: 303,
    });
    expect(await endpointRow(h.workspace.org.id, endpoint.id)).toMatchObject({ enabled: true, disabledReason: null });
  });

  it('records a test event addressed to the endpoint alone, and its page waits for the delivery', async () => {
    const { org } = await createOrg(h.stack.orm);
    const endpoint = await insertEndpoint(h.stack.orm, org.id, { events: ['contact.created'] });
    const client = await signIn(org.id);
    const sent = await client.submit(`/dashboard/webhooks/${endpoint.id}`, `/dashboard/webhooks/${endpoint.id}/test`, {});
    expect(sent.status).toBe(303);
    const location = sent.headers.get('location')!;
    const eventId = /\/tests\/([0-9a-f]{24})$/.exec(location)![1]!;
    const event = await scopeToOrg(h.stack.orm.em.fork(), org.id).findOneOrFail(Event, { id: eventId });
    expect(event).toMatchObject({ type: 'webhook.test', data: { endpoint_id: endpoint.id } });
    const waiting = await client.get(location);
    expect(waiting.status).toBe(200);
    expect(waiting.headers.get('refresh')).toBe('1');
    // Once the fan-out has made the delivery (no worker runs here: the row stands in for it), the page leads to it.
    const em = scopeToOrg(h.stack.orm.em.fork(), org.id);
    const delivery = em.create(WebhookDelivery, {
      orgId: org.id,
      webhookId: endpoint.id,
      eventId,
      eventType: 'webhook.test',
      status: 'queued',
      attemptCount: 0,
      replayCount: 0,
      nextAttemptAt: new Date(),
    });
    await em.flush();
    const found = await client.get(location);
    expect(found.status).toBe(303);
    expect(found.headers.get('location')).toBe(`/dashboard/webhooks/deliveries/${delivery.id}`);
  });

  it('confirms a deletion on its own page, stating what it ends, then deletes', async () => {
    const endpoint = await insertEndpoint(h.stack.orm, h.workspace.org.id);
    await insertDelivery(h.stack.orm, h.workspace.org.id, { webhookId: endpoint.id, status: 'failed' });
    const client = await signIn();
    const confirm = await client.get(`/dashboard/webhooks/${endpoint.id}/delete`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('1 delivery waiting to be sent or retried');
    expect(confirm.text).toContain('cannot be undone');
    const deleted = await client.submit(`/dashboard/webhooks/${endpoint.id}/delete`, `/dashboard/webhooks/${endpoint.id}/delete`, {});
    expect(deleted.status).toBe(303);
    expect(deleted.headers.get('location')).toBe('/dashboard/webhooks?deleted=1');
    expect(await endpointRow(h.workspace.org.id, endpoint.id)).toBeNull();
    const [delivery] = await scopeToOrg(h.stack.orm.em.fork(), h.workspace.org.id).find(WebhookDelivery, { webhookId: endpoint.id });
    expect(delivery).toMatchObject({ status: 'exhausted' });
  });

  it("answers 404 for another workspace's endpoint on every form, and changes nothing", async () => {
    const { org: other } = await createOrg(h.stack.orm);
    const foreign = await insertEndpoint(h.stack.orm, other.id);
    const client = await signIn();
    for (const path of [
      `/dashboard/webhooks/${foreign.id}/edit`,
      `/dashboard/webhooks/${foreign.id}/delete`,
      `/dashboard/webhooks/${foreign.id}/tests/${'a'.repeat(24)}`,
    ]) {
      expect((await client.get(path)).status, path).toBe(404);
    }
    for (const action of ['edit', 'disable', 'enable', 'test', 'delete']) {
      const posted = await client.submit('/dashboard/webhooks', `/dashboard/webhooks/${foreign.id}/${action}`, {
        name: 'taken',
        url: 'https://x.example.com',
        events: '*',
      });
      expect(posted.status, action).toBe(404);
    }
    expect(await endpointRow(other.id, foreign.id)).toMatchObject({ name: foreign.name, enabled: true });
    const events = await scopeToOrg(h.stack.orm.em.fork(), other.id).count(Event, { type: 'webhook.test' });
    expect(events).toBe(0);
  });
});
