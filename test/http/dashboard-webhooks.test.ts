import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookAttempt, WebhookDelivery, WebhookEndpoint } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { decryptSecret } from '../../src/crypto/secret-box.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { webhookEndpointWorkflowId } from '../../workflows/webhook-endpoint.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { dashboardClient, decodeEntities, signedInPerson } from '../support/dashboard-client.ts';
import { createOrg, unique } from '../support/factories.ts';
import { insertDelivery, insertEndpoint, type DeliveryRecord, type WebhookRecord } from '../support/webhook-rows.ts';

describe("the dashboard's webhooks pages", () => {
  let h: ApiHarness;
  let temporal: TemporalClientHandle;
  /** Endpoint actors woken by replays, terminated at the end (no worker runs here). */
  const started: string[] = [];
  const email = () => `${unique('person').toLowerCase()}@example.com`;
  const person = () => signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email() });
  const deliveryRow = (orgId: string, id: string) => scopeToOrg(h.stack.orm.em, orgId).findOneOrFail(WebhookDelivery, { id });
  const endpointRow = (orgId: string, id: string) => scopeToOrg(h.stack.orm.em, orgId).findOneOrFail(WebhookEndpoint, { id });
  /** A page's text without the break opportunities (`<wbr>`) long runs get. */
  const plain = (text: string) => text.replaceAll('<wbr>', '');

  beforeAll(async () => {
    h = await startApiHarness();
    temporal = await connectTemporalClient(h.stack.config);
  });
  afterAll(async () => {
    for (const workflowId of started) {
      await temporal.client.workflow
        .getHandle(workflowId)
        .terminate('test over')
        .catch(() => {});
    }
    await temporal.close();
    await h.close();
  });

  it('answers no page without a session (303 to sign-in) and changes nothing', async () => {
    const endpoint = await insertEndpoint(h.stack.orm, h.workspace.org.id);
    const delivery = await insertDelivery(h.stack.orm, h.workspace.org.id, { webhookId: endpoint.id, status: 'exhausted' });
    const client = dashboardClient(h.api.url);
    for (const path of ['/dashboard/webhooks', `/dashboard/webhooks/${endpoint.id}`, `/dashboard/webhooks/deliveries/${delivery.id}`]) {
      const page = await client.get(path);
      expect(page.status, path).toBe(303);
      expect(page.headers.get('location'), path).toBe('/dashboard/sign-in');
    }
    expect((await client.post(`/dashboard/webhooks/deliveries/${delivery.id}/replay`, { _csrf: 'x' })).status).toBe(303);
    expect((await client.post(`/dashboard/webhooks/${endpoint.id}/rotate-secret`, { _csrf: 'x' })).status).toBe(303);
    expect(await deliveryRow(h.workspace.org.id, delivery.id)).toMatchObject({ status: 'exhausted', replayCount: 0 });
    expect((await endpointRow(h.workspace.org.id, endpoint.id)).secretEncrypted).toBe(endpoint.secretEncrypted);
  });

  it("lists the workspace's endpoints (URL, events, state) and not another workspace's", async () => {
    const { org: other } = await createOrg(h.stack.orm);
    const foreign = await insertEndpoint(h.stack.orm, other.id, { url: 'https://foreign.example.com/hook' });
    const enabled = await insertEndpoint(h.stack.orm, h.workspace.org.id, {
      url: 'https://orders.example.com/hook',
      events: ['email.delivered', 'email.bounced'],
    });
    const disabled = await insertEndpoint(h.stack.orm, h.workspace.org.id, {
      enabled: false,
      disabledReason: 'The receiver answered 410 Gone.',
    });
    const { client } = await person();
    const page = await client.get('/dashboard/webhooks');
    expect(page.status).toBe(200);
    expect(page.text).toContain(`href="/dashboard/webhooks/${enabled.id}"`);
    expect(plain(page.text)).toContain('https://orders.example.com/hook');
    expect(page.text).toContain('email.delivered, email.bounced');
    expect(page.text).toContain(disabled.name);
    expect(page.text).toMatch(/class="state disabled"/);
    expect(page.text).toContain('aria-current="page">Webhooks');
    expect(page.text).not.toContain(foreign.name);
    expect(plain(page.text)).not.toContain('foreign.example.com');
  });

  it("shows an endpoint's delivery log newest first, filtered by status with a GET form", async () => {
    const endpoint = await insertEndpoint(h.stack.orm, h.workspace.org.id);
    const base = Date.now() - 60_000;
    const failed = await insertDelivery(h.stack.orm, h.workspace.org.id, {
      webhookId: endpoint.id,
      status: 'exhausted',
      type: 'email.bounced',
      createdAt: new Date(base),
    });
    const delivered = await insertDelivery(h.stack.orm, h.workspace.org.id, {
      webhookId: endpoint.id,
      status: 'delivered',
      type: 'email.delivered',
      createdAt: new Date(base + 1000),
    });
    const elsewhere = await insertDelivery(h.stack.orm, h.workspace.org.id, { status: 'delivered', type: 'contact.deleted' });
    const { client } = await person();

    const page = await client.get(`/dashboard/webhooks/${endpoint.id}`);
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/<form method="get" action="\/dashboard\/webhooks\/[0-9a-f]{24}"/);
    expect(page.text).toContain('<label for="status">Status</label>');
    const newer = page.text.indexOf(`/dashboard/webhooks/deliveries/${delivered.id}`);
    const older = page.text.indexOf(`/dashboard/webhooks/deliveries/${failed.id}`);
    expect(newer).toBeGreaterThan(0);
    expect(older).toBeGreaterThan(newer);
    expect(page.text).not.toContain(elsewhere.id);

    const onlyExhausted = await client.get(`/dashboard/webhooks/${endpoint.id}?status=exhausted`);
    expect(onlyExhausted.text).toContain(failed.id);
    expect(onlyExhausted.text).not.toContain(delivered.id);
    expect(onlyExhausted.text).toContain('<option value="exhausted" selected>');
    const none = await client.get(`/dashboard/webhooks/${endpoint.id}?status=queued`);
    expect(none.text).toContain('No deliveries with status queued.');
  });

  it('pages the delivery log with an "Older" link', async () => {
    const endpoint = await insertEndpoint(h.stack.orm, h.workspace.org.id);
    const base = Date.now() - 3_600_000;
    const rows = [];
    for (let i = 0; i < 51; i += 1)
      rows.push(
        await insertDelivery(h.stack.orm, h.workspace.org.id, {
          webhookId: endpoint.id,
          status: 'delivered',
          createdAt: new Date(base + i * 1000),
        }),
      );
    const { client } = await person();
    const first = await client.get(`/dashboard/webhooks/${endpoint.id}?status=delivered`);
    expect(first.text).toContain(rows[50]!.id);
    expect(first.text).not.toContain(rows[0]!.id);
    const next = /href="([^"]+)" rel="next">Older deliveries/.exec(first.text)?.[1];
    expect(next).toBeDefined();
    const second = await client.get(decodeEntities(next!));
    expect(second.status).toBe(200);
    expect(second.text).toContain(rows[0]!.id);
    expect(second.text).not.toContain(rows[1]!.id);
    expect(second.text).not.toContain('rel="next"');
  });

  it("shows a delivery's attempts: status codes, response bodies (as text), times", async () => {
    const delivery = await insertDelivery(h.stack.orm, h.workspace.org.id, { status: 'exhausted', attempts: 3 });
    await scopeToOrg(h.stack.orm.em, h.workspace.org.id).nativeUpdate(
      WebhookAttempt,
      { deliveryId: delivery.id, attemptNumber: 3 },
      { responseExcerpt: '<script>alert("receiver")</script>', statusCode: 503 },
    );
    const { client } = await person();
    const page = await client.get(`/dashboard/webhooks/deliveries/${delivery.id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<th scope="col">Response body</th>');
    expect(page.text.match(/data-label="Response">500</g)).toHaveLength(2);
    expect(page.text).toContain('data-label="Response">503<');
    expect(page.text).toContain('<code>boom</code>');
    expect(page.text).toContain('http_error: 500');
    expect(page.text).toMatch(/<time datetime="\d{4}-\d{2}-\d{2}T/);
    expect(page.text).not.toContain('<script>alert("receiver")');
    expect(plain(page.text)).toContain('<code>&#60;script&#62;alert(&#34;receiver&#34;)&#60;/script&#62;</code>');
    // Newest first.
    expect(page.text.indexOf('>#3<')).toBeLessThan(page.text.indexOf('>#1<'));
    expect(page.text).toContain(`action="/dashboard/webhooks/deliveries/${delivery.id}/replay"`);
  });

  it('replays a delivery from its page (CSRF token required): queued again as the API sees it; a second replay in flight is 409 with a message', async () => {
    const delivery = await insertDelivery(h.stack.orm, h.workspace.org.id, { status: 'exhausted', attempts: 2 });
    started.push(webhookEndpointWorkflowId(delivery.webhookId));
    const { client } = await person();
    const pagePath = `/dashboard/webhooks/deliveries/${delivery.id}`;
    const action = `${pagePath}/replay`;

    expect((await client.post(action, {})).status).toBe(403);
    expect((await client.post(action, { _csrf: 'forged' })).status).toBe(403);
    expect((await client.submit(pagePath, action, {}, { origin: 'https://evil.example' })).status).toBe(403);
    expect(await deliveryRow(h.workspace.org.id, delivery.id)).toMatchObject({ status: 'exhausted', replayCount: 0 });

    const replayed = await client.submit(pagePath, action, {});
    expect(replayed.status).toBe(303);
    expect(replayed.headers.get('location')).toBe(`${pagePath}?replayed=1`);
    const listed = await h.request('GET', `/api/v1/webhooks/deliveries?webhook_id=${delivery.webhookId}`);
    expect(listed.status).toBe(200);
    expect((listed.body.data as DeliveryRecord[])[0]).toMatchObject({ id: delivery.id, status: 'queued', replay_count: 1 });
    const after = await client.get(`${pagePath}?replayed=1`);
    expect(after.text).toContain('Replay queued');
    expect(after.text).toContain('class="state queued"');

    const again = await client.submit(pagePath, action, {});
    expect(again.status).toBe(409);
    expect(again.text).toContain('role="alert"');
    expect(again.text).toContain('still in flight');
    expect(await deliveryRow(h.workspace.org.id, delivery.id)).toMatchObject({ status: 'queued', replayCount: 1 });
  });

  it('says why a delivery to a disabled endpoint cannot be replayed', async () => {
    const endpoint = await insertEndpoint(h.stack.orm, h.workspace.org.id, {
      enabled: false,
      disabledReason: 'The receiver answered 410 Gone.',
    });
    const delivery = await insertDelivery(h.stack.orm, h.workspace.org.id, { webhookId: endpoint.id, status: 'exhausted' });
    const { client } = await person();
    const pagePath = `/dashboard/webhooks/deliveries/${delivery.id}`;
    const refused = await client.submit(pagePath, `${pagePath}/replay`, {});
    expect(refused.status).toBe(409);
    expect(refused.text).toContain('endpoint is disabled');
  });

  it('rotates the signing secret: the new secret is shown once with a copy button; the CSRF token is required', async () => {
    const created = await h.request('POST', '/api/v1/webhooks', {
      headers: idem(),
      body: { name: 'Rotated', url: 'https://receiver.example.com/rotate', events: ['*'] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { id, secret: original } = created.body.data as WebhookRecord;
    const { client } = await person();
    const pagePath = `/dashboard/webhooks/${id}`;
    const action = `${pagePath}/rotate-secret`;
    const sealed = () => endpointRow(h.workspace.org.id, id);

    expect((await client.post(action, { overlap_seconds: '86400' })).status).toBe(403);
    expect((await client.post(action, { _csrf: 'forged', overlap_seconds: '86400' })).status).toBe(403);
    expect(decryptSecret(h.stack.config.encryptionKey!, (await sealed()).secretEncrypted)).toBe(original);

    const rotated = await client.submit(pagePath, action, { overlap_seconds: '3600' });
    expect(rotated.status).toBe(200);
    const shown = /<code id="new-secret">([^<]+)<\/code><button type="button" data-copy="new-secret">Copy<\/button>/.exec(
      rotated.text,
    )?.[1];
    expect(shown).toMatch(/^whsec_[A-Za-z0-9+/]{43}&#61;$/);
    const secret = shown!.replace('&#61;', '=');
    const row = await sealed();
    expect(decryptSecret(h.stack.config.encryptionKey!, row.secretEncrypted)).toBe(secret);
    expect(decryptSecret(h.stack.config.encryptionKey!, row.previousSecretEncrypted!)).toBe(original);
    expect(row.previousSecretExpiresAt!.getTime() - Date.now()).toBeGreaterThan(3_500_000);
    expect(row.previousSecretExpiresAt!.getTime() - Date.now()).toBeLessThanOrEqual(3_600_000);

    // Once: the page shows it no more.
    const later = await client.get(pagePath);
    expect(later.text).not.toContain(shown!);
    expect(later.text).not.toContain('id="new-secret"');

    const refused = await client.submit(pagePath, action, { overlap_seconds: '12345' });
    expect(refused.status).toBe(400);
    expect(decryptSecret(h.stack.config.encryptionKey!, (await sealed()).secretEncrypted)).toBe(secret);
  });

  it("keeps workspaces apart: another workspace's endpoint or delivery is 404 and is neither replayed nor rotated", async () => {
    const { org: other } = await createOrg(h.stack.orm);
    const endpoint = await insertEndpoint(h.stack.orm, other.id);
    const delivery = await insertDelivery(h.stack.orm, other.id, { webhookId: endpoint.id, status: 'exhausted' });
    const { client } = await person();
    expect((await client.get(`/dashboard/webhooks/${endpoint.id}`)).status).toBe(404);
    expect((await client.get(`/dashboard/webhooks/deliveries/${delivery.id}`)).status).toBe(404);
    expect((await client.get('/dashboard/webhooks/not-an-id')).status).toBe(404);
    expect((await client.submit('/dashboard/webhooks', `/dashboard/webhooks/deliveries/${delivery.id}/replay`, {})).status).toBe(404);
    expect(
      (await client.submit('/dashboard/webhooks', `/dashboard/webhooks/${endpoint.id}/rotate-secret`, { overlap_seconds: '0' })).status,
    ).toBe(404);
    expect(await deliveryRow(other.id, delivery.id)).toMatchObject({ status: 'exhausted', replayCount: 0 });
    expect((await endpointRow(other.id, endpoint.id)).secretEncrypted).toBe(endpoint.secretEncrypted);
    // Nor through its own endpoint's page: the log filters on the workspace.
    const own = await insertEndpoint(h.stack.orm, h.workspace.org.id);
    expect((await client.get(`/dashboard/webhooks/${own.id}`)).text).not.toContain(delivery.id);
  });

  it('renders endpoint names and URLs as text, never markup', async () => {
    const inserted = await insertEndpoint(h.stack.orm, h.workspace.org.id, {
      url: 'https://receiver.example.com/a?b="><script>alert(2)</script>',
    });
    await scopeToOrg(h.stack.orm.em, h.workspace.org.id).nativeUpdate(
      WebhookEndpoint,
      { id: inserted.id },
      { name: '<img src=x onerror=alert(1)>', description: '<b>bold</b>' },
    );
    const { id } = inserted;
    const { client } = await person();
    for (const path of ['/dashboard/webhooks', `/dashboard/webhooks/${id}`]) {
      const page = await client.get(path);
      expect(plain(page.text), path).not.toContain('<img src=x');
      expect(plain(page.text), path).not.toContain('<script>alert(2)');
      expect(plain(page.text), path).not.toContain('<b>bold');
      expect(plain(page.text), path).toContain('&#62;&#60;script&#62;alert(2)');
    }
  });
});
