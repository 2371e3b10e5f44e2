import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookDelivery, WebhookEndpoint } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { loadConfig } from '../../src/config.ts';
import { decryptSecret } from '../../src/crypto/secret-box.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { startApi } from '../../src/main-api.ts';
import { createApiKeysService } from '../../src/modules/auth/api-keys.service.ts';
import { webhookEndpointWorkflowId } from '../../workflows/webhook-endpoint.ts';
import { DISABLED_OVER_API, ENDPOINT_DELETED_ERROR } from '../../src/modules/webhooks/webhooks.service.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient, expectError, fieldsOf } from '../support/http.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { insertDelivery, insertEndpoint, type DeliveryRecord, type WebhookRecord } from '../support/webhook-rows.ts';

/** Short enough to keep the worker tests quick, long enough to act while a retry waits. */
const SCHEDULE = '0s,2s';
const GONE_REASON = 'the receiver answered 410 Gone to delivery 69558b000000000000000001 at 2026-11-21T00:00:00.000Z';

const validBody = (overrides: Record<string, unknown> = {}) => ({
  name: 'Orders service',
  url: 'https://receiver.example.com/herald',
  events: ['contact.created', 'email.delivered'],
  ...overrides,
});

describe('webhook endpoint management', () => {
  let h: ApiHarness;
  let temporal: TemporalClientHandle;
  const started: string[] = [];

  beforeAll(async () => {
    h = await startApiHarness({ WEBHOOK_RETRY_SCHEDULE: SCHEDULE });
    temporal = await connectTemporalClient(h.stack.config);
  });
  afterAll(async () => {
    for (const workflowId of started) {
      await temporal.client.workflow
        .getHandle(workflowId)
        .terminate('test over')
        .catch(() => {});
    }
    await temporal?.close();
    await h?.close();
  });

  const create = async (body: unknown = validBody(), request = h.request): Promise<WebhookRecord> => {
    const response = await request('POST', '/api/v1/webhooks', { headers: idem(), body });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return response.body.data as WebhookRecord;
  };
  const get = (id: string, request = h.request) => request('GET', `/api/v1/webhooks/${id}`);
  const patch = (id: string, body: unknown, options: { key?: string; headers?: Record<string, string> } = {}) =>
    h.request('PATCH', `/api/v1/webhooks/${id}`, {
      headers: options.headers ?? idem(),
      body,
      ...(options.key ? { key: options.key } : {}),
    });
  const remove = (id: string, request = h.request) => request('DELETE', `/api/v1/webhooks/${id}`, { headers: idem() });
  const replay = (id: string, request = h.request) => request('POST', `/api/v1/webhooks/deliveries/${id}/replay`, { headers: idem() });
  const endpointRow = (id: string, orgId = h.workspace.org.id) => scopeToOrg(h.stack.orm.em.fork(), orgId).findOne(WebhookEndpoint, { id });
  const deliveryRow = (id: string, orgId = h.workspace.org.id) =>
    scopeToOrg(h.stack.orm.em.fork(), orgId).findOneOrFail(WebhookDelivery, { id });
  const withoutSecret = ({ secret, ...record }: WebhookRecord) => {
    expect(secret).toMatch(/^whsec_/);
    return record;
  };

  describe('GET /api/v1/webhooks/{id}', () => {
    it('returns the endpoint record as listed, never the secret', async () => {
      const created = await create(validBody({ description: 'Order sync' }));
      const response = await get(created.id);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect(response.body.data).toEqual(withoutSecret(created));
      expect(JSON.stringify(response.body)).not.toContain('secret');
      const listed = (await h.request('GET', '/api/v1/webhooks?limit=100')).body.data as WebhookRecord[];
      expect(listed.find((w) => w.id === created.id)).toEqual(response.body.data);
    });

    it('finds an id given in upper case', async () => {
      const created = await create();
      expect((await get(created.id.toUpperCase())).body.data).toMatchObject({ id: created.id });
    });

    it('shows why Herald disabled an endpoint', async () => {
      const endpoint = await insertEndpoint(h.stack.orm, h.workspace.org.id, { enabled: false, disabledReason: GONE_REASON });
      expect((await get(endpoint.id)).body.data).toMatchObject({ enabled: false, disabled_reason: GONE_REASON });
    });

    it("answers 404 for an unknown id or another workspace's, 400 for a malformed id", async () => {
      expectError(await get('a'.repeat(24)), 404, 'not_found');
      const other = await createOrgWithKey(h.stack.orm);
      const foreign = await insertEndpoint(h.stack.orm, other.org.id);
      expectError(await get(foreign.id), 404, 'not_found');
      expect((await get(foreign.id, apiClient(h.api.url, other.key))).status).toBe(200);
      expectError(await get('not-an-id'), 400, 'invalid_request');
    });

    it('leaves GET /webhooks/deliveries to the delivery log', async () => {
      const response = await h.request('GET', '/api/v1/webhooks/deliveries');
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect(Array.isArray(response.body.data)).toBe(true);
    });
  });

  describe('PATCH /api/v1/webhooks/{id}', () => {
    it.each([
      [{ name: '  Renamed  ' }, { name: 'Renamed' }],
      [{ url: 'https://other.example.com/v2/hook?x=1' }, { url: 'https://other.example.com/v2/hook?x=1' }],
      [{ url: 'http://receiver.example.com/plain' }, { url: 'http://receiver.example.com/plain' }],
      [{ events: ['email.bounced', 'email.bounced', 'contact.deleted'] }, { events: ['email.bounced', 'contact.deleted'] }],
      [{ events: ['email.sent', '*'] }, { events: ['*'] }],
      [{ description: 'Now with a description' }, { description: 'Now with a description' }],
      [{ description: '' }, { description: '' }],
      [{ enabled: false }, { enabled: false, disabled_reason: DISABLED_OVER_API }],
      [
        { name: 'Both', events: ['broadcast.created'] },
        { name: 'Both', events: ['broadcast.created'] },
      ],
    ])('changes %j and nothing else', async (change, expected) => {
      const created = await create(validBody({ description: 'Before' }));
      const before = await endpointRow(created.id);
      const response = await patch(created.id, change);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      const data = response.body.data as WebhookRecord;
      expect(data).toEqual({ ...withoutSecret(created), ...expected, updated_at: expect.any(String) });
      expect(Date.parse(data.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
      expect(await get(created.id).then((r) => r.body.data)).toEqual(data);
      const row = await endpointRow(created.id);
      expect(row!.secretEncrypted).toBe(before!.secretEncrypted);
      expect(decryptSecret(h.stack.config.encryptionKey!, row!.secretEncrypted)).toBe(created.secret);
      expect(row!.disabledAt === null).toBe(data.enabled);
    });

    it.each([
      [{ name: 'x'.repeat(200) }],
      [{ url: `https://receiver.example.com/${'a'.repeat(2048 - 'https://receiver.example.com/'.length)}` }],
      [{ events: Array.from({ length: 100 }, () => 'contact.created') }],
      [{ description: 'd'.repeat(500) }],
    ])('accepts the bound %j', async (change) => {
      const created = await create();
      const response = await patch(created.id, change);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
    });

    it.each([
      [{}, '', 'check'],
      [{ name: '' }, 'name', 'min_length'],
      [{ name: '   ' }, 'name', 'min_length'],
      [{ name: 'x'.repeat(201) }, 'name', 'max_length'],
      [{ name: null }, 'name', 'string'],
      [{ url: '' }, 'url', 'min_length'],
      [{ url: `https://receiver.example.com/${'a'.repeat(2049 - 'https://receiver.example.com/'.length)}` }, 'url', 'max_length'],
      [{ url: 'receiver.example.com/hook' }, 'url', 'url'],
      [{ url: 'ftp://receiver.example.com/hook' }, 'url', 'check'],
      [{ url: 'https://user:pass@receiver.example.com/hook' }, 'url', 'check'],
      [{ events: [] }, 'events', 'min_length'],
      [{ events: Array.from({ length: 101 }, () => 'contact.created') }, 'events', 'max_length'],
      [{ events: ['contact.created', 'contact.renamed'] }, 'events.1', 'picklist'],
      [{ events: 'contact.created' }, 'events', 'array'],
      [{ description: 'd'.repeat(501) }, 'description', 'max_length'],
      [{ enabled: 'yes' }, 'enabled', 'boolean'],
      [{ enabled: null }, 'enabled', 'boolean'],
      [{ secret: 'whsec_mine' }, 'secret', 'unknown_field'],
      [{ name: 'Fine', disabled_reason: null }, 'disabled_reason', 'unknown_field'],
    ])('answers 400 invalid_request for %j naming field "%s" (%s), changing nothing', async (change, path, type) => {
      const created = await create();
      const response = await patch(created.id, change);
      expectError(response, 400, 'invalid_request');
      expect(fieldsOf(response), JSON.stringify(response.body)).toContainEqual(expect.objectContaining({ path, location: 'body', type }));
      expect((await get(created.id)).body.data).toEqual(withoutSecret(created));
    });

    it('names the updatable fields when the body sets none', async () => {
      const created = await create();
      const response = await patch(created.id, {});
      expectError(response, 400, 'invalid_request');
      expect(response.body.error?.message).toContain('name, url, events, description, enabled');
    });

    it('keeps live-key rules: https only for a live key, and for an endpoint a live key registered', async () => {
      const { key: liveKey } = await createApiKeysService({ orm: h.stack.orm }).createApiKey({
        orgId: h.workspace.org.id,
        scopes: ['all'],
        mode: 'live',
        rateLimitPerMinute: 100_000,
        burst: 10_000,
      });
      const live = apiClient(h.api.url, liveKey);
      const testRegistered = await create();
      const refused = await patch(testRegistered.id, { url: 'http://receiver.example.com/hook' }, { key: liveKey });
      expectError(refused, 400, 'invalid_request');
      expect(refused.body.error?.details).toMatchObject({
        reason: 'HTTPS_REQUIRED',
        fields: [{ path: 'url', location: 'body', type: 'https_required' }],
      });
      expect((await patch(testRegistered.id, { url: 'https://receiver.example.com/live' }, { key: liveKey })).status).toBe(200);

      const liveRegistered = await create(validBody(), live);
      const byTestKey = await patch(liveRegistered.id, { url: 'http://receiver.example.com/hook' });
      expectError(byTestKey, 400, 'invalid_request');
      expect(byTestKey.body.error?.details).toMatchObject({ reason: 'HTTPS_REQUIRED' });
      expect((await patch(liveRegistered.id, { name: 'Renamed by a test key' })).status).toBe(200);
      expect((await get(liveRegistered.id)).body.data).toMatchObject({ url: validBody().url, name: 'Renamed by a test key' });
    });

    it('refuses an internal target when private targets are not allowed', async () => {
      const created = await create();
      const api = await startApi(loadConfig({ ...h.stack.env, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' }), createLogger('silent'));
      try {
        const request = apiClient(api.url, h.workspace.key);
        for (const url of ['http://127.0.0.1:8080/hook', 'http://169.254.169.254/latest', 'http://localhost/hook']) {
          const response = await request('PATCH', `/api/v1/webhooks/${created.id}`, { headers: idem(), body: { url } });
          expectError(response, 400, 'invalid_request');
          expect(response.body.error?.details, url).toMatchObject({ reason: 'FORBIDDEN_TARGET' });
        }
      } finally {
        await api.close();
      }
      expect((await patch(created.id, { url: 'http://127.0.0.1:8080/hook' })).status).toBe(200);
    });

    it('re-enables an endpoint Herald disabled, clearing disabled_reason and disabled_at', async () => {
      const endpoint = await insertEndpoint(h.stack.orm, h.workspace.org.id, { enabled: false, disabledReason: GONE_REASON });
      await scopeToOrg(h.stack.orm.em.fork(), h.workspace.org.id).nativeUpdate(
        WebhookEndpoint,
        { id: endpoint.id },
        { disabledAt: new Date() },
      );
      const response = await patch(endpoint.id, { enabled: true });
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect(response.body.data).toMatchObject({ enabled: true, disabled_reason: null });
      expect(await endpointRow(endpoint.id)).toMatchObject({ enabled: true, disabledReason: null, disabledAt: null });
    });

    it('keeps the first reason when an already disabled endpoint is disabled again', async () => {
      const endpoint = await insertEndpoint(h.stack.orm, h.workspace.org.id, { enabled: false, disabledReason: GONE_REASON });
      const response = await patch(endpoint.id, { enabled: false, name: 'Still off' });
      expect(response.body.data).toMatchObject({ enabled: false, disabled_reason: GONE_REASON, name: 'Still off' });
    });

    it('disables and re-enables over the API', async () => {
      const created = await create();
      expect((await patch(created.id, { enabled: false })).body.data).toMatchObject({ enabled: false, disabled_reason: DISABLED_OVER_API });
      expect((await endpointRow(created.id))!.disabledAt).toBeInstanceOf(Date);
      expect((await patch(created.id, { enabled: true })).body.data).toMatchObject({ enabled: true, disabled_reason: null });
    });

    it('lets a delivery of a 410-disabled endpoint be replayed once it is re-enabled', async () => {
      const endpoint = await insertEndpoint(h.stack.orm, h.workspace.org.id, { enabled: false, disabledReason: GONE_REASON });
      const delivery = await insertDelivery(h.stack.orm, h.workspace.org.id, { webhookId: endpoint.id, status: 'exhausted' });
      const refused = await replay(delivery.id);
      expectError(refused, 409, 'conflict');
      expect(refused.body.error?.details).toEqual({ reason: 'ENDPOINT_DISABLED', webhook_id: endpoint.id });

      expect((await patch(endpoint.id, { enabled: true })).status).toBe(200);
      const replayed = await replay(delivery.id);
      expect(replayed.status, JSON.stringify(replayed.body)).toBe(202);
      started.push(webhookEndpointWorkflowId(endpoint.id));
      expect(replayed.body.data).toMatchObject({ id: delivery.id, webhook_id: endpoint.id, status: 'queued', replay_count: 1 });
      expect((await temporal.client.workflow.getHandle(webhookEndpointWorkflowId(endpoint.id)).describe()).status.name).toBe('RUNNING');
    });

    it('requires an Idempotency-Key, and the same key answers the first result again', async () => {
      const created = await create();
      expectError(await h.request('PATCH', `/api/v1/webhooks/${created.id}`, { body: { name: 'No key' } }), 400, 'invalid_request');
      const headers = idem();
      const first = await patch(created.id, { name: 'Once' }, { headers });
      await patch(created.id, { name: 'Twice' });
      const again = await patch(created.id, { name: 'Once' }, { headers });
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
      expect((await get(created.id)).body.data).toMatchObject({ name: 'Twice' });
    });

    it("answers 404 for an unknown id or another workspace's, changing nothing", async () => {
      expectError(await patch('b'.repeat(24), { name: 'Nobody' }), 404, 'not_found');
      const other = await createOrgWithKey(h.stack.orm);
      const foreign = await insertEndpoint(h.stack.orm, other.org.id);
      expectError(await patch(foreign.id, { name: 'Hijacked', enabled: false }), 404, 'not_found');
      expect(await endpointRow(foreign.id, other.org.id)).toMatchObject({ name: foreign.name, enabled: true });
    });
  });

  describe('POST /api/v1/webhooks/{id}/rotate-secret', () => {
    const rotate = (id: string, body: unknown, headers: Record<string, string> = idem(), request = h.request) =>
      request('POST', `/api/v1/webhooks/${id}/rotate-secret`, { headers, body });
    const sealedOf = async (id: string) => {
      const row = (await endpointRow(id))!;
      const key = h.stack.config.encryptionKey!;
      return {
        secret: decryptSecret(key, row.secretEncrypted),
        previous: row.previousSecretEncrypted ? decryptSecret(key, row.previousSecretEncrypted) : null,
        previousUntil: row.previousSecretExpiresAt,
      };
    };

    it('replaces the secret, keeps the old one for the overlap (default 24 h), and replays the same new secret', async () => {
      const created = await create();
      const headers = idem();
      const response = await rotate(created.id, {}, headers);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      const data = response.body.data as WebhookRecord & { previous_secret_expires_at: string };
      expect(withoutSecret(data)).toEqual({
        ...withoutSecret(created),
        previous_secret_expires_at: expect.any(String),
        updated_at: expect.any(String),
      });
      expect(data.secret).not.toBe(created.secret);
      const overlapEnd = Date.parse(data.previous_secret_expires_at) - Date.now();
      expect(overlapEnd).toBeGreaterThan(24 * 3600_000 - 60_000);
      expect(overlapEnd).toBeLessThanOrEqual(24 * 3600_000);
      expect(await sealedOf(created.id)).toMatchObject({ secret: data.secret, previous: created.secret });
      const replayed = await rotate(created.id, {}, headers);
      expect(replayed.headers.get('idempotent-replayed')).toBe('true');
      expect((replayed.body.data as { secret: string }).secret).toBe(data.secret);
      expect(JSON.stringify((await get(created.id)).body)).not.toContain('whsec_');
    });

    it('takes an overlap from 0 (none) to 7 days and refuses one outside it', async () => {
      const created = await create();
      const none = await rotate(created.id, { overlap_seconds: 0 });
      expect(none.body.data).toMatchObject({ previous_secret_expires_at: null });
      expect(await sealedOf(created.id)).toMatchObject({ previous: null, previousUntil: null });
      const week = await rotate(created.id, { overlap_seconds: 604_800 });
      expect(week.status).toBe(200);
      // Rotating again drops the older secret: the previous one is the secret just replaced.
      expect((await sealedOf(created.id)).previous).toBe((none.body.data as { secret: string }).secret);
      for (const overlap of [604_801, -1, 1.5, '60']) {
        const refused = await rotate(created.id, { overlap_seconds: overlap });
        expectError(refused, 400, 'invalid_request');
        expect(fieldsOf(refused).map((f) => f.path)).toEqual(['overlap_seconds']);
      }
      expectError(await rotate(created.id, { overlap: 60 }), 400, 'invalid_request');
    });

    it('needs webhooks:admin, as deletion does (spec scope table); webhooks:write is not enough', async () => {
      const created = await create();
      const writer = await createOrgWithKey(h.stack.orm, {
        scopes: ['webhooks:write', 'webhooks:read'],
        rateLimitPerMinute: 100_000,
        burst: 10_000,
      });
      const request = apiClient(h.api.url, writer.key);
      const own = await create(validBody(), request);
      expectError(await rotate(own.id, {}, idem(), request), 403, 'missing_scope');
      expectError(await remove(own.id, request), 403, 'missing_scope');
      expectError(await rotate(created.id, {}, idem(), request), 403, 'missing_scope');
    });
  });

  describe('DELETE /api/v1/webhooks/{id}', () => {
    it('removes the endpoint: 200 {_id, deleted: true}, then 404 everywhere', async () => {
      const created = await create();
      const response = await remove(created.id);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect(response.body.data).toEqual({ _id: created.id, deleted: true });
      expect(await endpointRow(created.id)).toBeNull();
      expectError(await get(created.id), 404, 'not_found');
      expectError(await patch(created.id, { name: 'Ghost' }), 404, 'not_found');
      expectError(await remove(created.id), 404, 'not_found');
      const listed = (await h.request('GET', '/api/v1/webhooks?limit=100')).body.data as WebhookRecord[];
      expect(listed.map((w) => w.id)).not.toContain(created.id);
    });

    it('keeps its delivery log; pending deliveries end exhausted, one in flight is left to its attempt', async () => {
      const endpoint = await insertEndpoint(h.stack.orm, h.workspace.org.id);
      const orgId = h.workspace.org.id;
      const deliveries = {
        delivered: await insertDelivery(h.stack.orm, orgId, { webhookId: endpoint.id, status: 'delivered' }),
        queued: await insertDelivery(h.stack.orm, orgId, { webhookId: endpoint.id, status: 'queued' }),
        failed: await insertDelivery(h.stack.orm, orgId, { webhookId: endpoint.id, status: 'failed', attempts: 2 }),
        delivering: await insertDelivery(h.stack.orm, orgId, { webhookId: endpoint.id, status: 'delivering' }),
      };
      const survivor = await insertDelivery(h.stack.orm, orgId, { status: 'failed' });
      expect((await remove(endpoint.id)).status).toBe(200);

      const log = await h.request('GET', `/api/v1/webhooks/deliveries?webhook_id=${endpoint.id}`);
      const byId = new Map((log.body.data as DeliveryRecord[]).map((d) => [d.id, d]));
      expect(byId.size).toBe(4);
      expect(byId.get(deliveries.delivered.id)).toMatchObject({ status: 'delivered', last_error: null });
      for (const pending of [deliveries.queued, deliveries.failed]) {
        expect(byId.get(pending.id)).toMatchObject({ status: 'exhausted', last_error: ENDPOINT_DELETED_ERROR, next_attempt_at: null });
      }
      expect(byId.get(deliveries.failed.id)!.attempts).toHaveLength(2);
      expect(byId.get(deliveries.delivering.id)).toMatchObject({ status: 'delivering' });
      expect((await deliveryRow(survivor.id)).status).toBe('failed');
    });

    it('answers 409 ENDPOINT_DELETED to a replay of one of its deliveries', async () => {
      const endpoint = await insertEndpoint(h.stack.orm, h.workspace.org.id);
      const delivery = await insertDelivery(h.stack.orm, h.workspace.org.id, { webhookId: endpoint.id, status: 'delivered' });
      expect((await remove(endpoint.id)).status).toBe(200);
      const response = await replay(delivery.id);
      expectError(response, 409, 'conflict');
      expect(response.body.error?.details).toEqual({ reason: 'ENDPOINT_DELETED', webhook_id: endpoint.id });
      expect(await deliveryRow(delivery.id)).toMatchObject({ status: 'delivered', replayCount: 0 });
    });

    it("answers 404 for an unknown id or another workspace's, deleting nothing", async () => {
      expectError(await remove('c'.repeat(24)), 404, 'not_found');
      const other = await createOrgWithKey(h.stack.orm);
      const foreign = await insertEndpoint(h.stack.orm, other.org.id);
      const pending = await insertDelivery(h.stack.orm, other.org.id, { webhookId: foreign.id, status: 'queued' });
      expectError(await remove(foreign.id), 404, 'not_found');
      expect(await endpointRow(foreign.id, other.org.id)).not.toBeNull();
      expect((await deliveryRow(pending.id, other.org.id)).status).toBe('queued');
    });

    it('requires an Idempotency-Key, and the same key answers the first result again', async () => {
      const created = await create();
      expectError(await h.request('DELETE', `/api/v1/webhooks/${created.id}`), 400, 'invalid_request');
      const headers = idem();
      const first = await h.request('DELETE', `/api/v1/webhooks/${created.id}`, { headers });
      const again = await h.request('DELETE', `/api/v1/webhooks/${created.id}`, { headers });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
    });
  });

  describe('with a real worker and a receiver on 127.0.0.1', () => {
    const logger = createLogger('warn');
    // Its own database and task queues: the events the row helpers above wrote would otherwise
    // fan out to every endpoint of the first workspace and keep this worker busy.
    let w: ApiHarness;
    let worker: RunningWorker | undefined;
    let receiver: WebhookReceiver;
    let request: ReturnType<typeof apiClient>;

    beforeAll(async () => {
      installTemporalLogging(logger);
      receiver = await startWebhookReceiver();
      w = await startApiHarness({ WEBHOOK_RETRY_SCHEDULE: SCHEDULE });
      request = w.request;
      worker = await startWorker(w.stack.config, logger);
    });
    afterAll(async () => {
      await worker?.shutdown();
      await receiver?.close();
      await w?.close();
    });

    const deliveriesOf = async (webhookId: string) =>
      (await request('GET', `/api/v1/webhooks/deliveries?webhook_id=${webhookId}`)).body.data as DeliveryRecord[];
    const waitForStatus = (webhookId: string, status: string) =>
      waitFor(
        `a delivery to ${webhookId} to be ${status}`,
        async () => (await deliveriesOf(webhookId)).find((d) => d.status === status),
        30_000,
        50,
      );
    const addContact = (email: string) => request('POST', '/api/v1/contacts', { headers: idem(), body: { email } });

    it('after a 410 disabled the endpoint, re-enabling it lets a replay be delivered', async () => {
      receiver.respond('/gone', (_request, index) => (index === 0 ? { status: 410, body: 'gone' } : { status: 200 }));
      const endpoint = await create(validBody({ url: receiver.url('/gone'), events: ['contact.created'] }), request);
      expect((await addContact('gone@example.com')).status).toBe(201);

      const exhausted = await waitForStatus(endpoint.id, 'exhausted');
      const disabled = (await get(endpoint.id, request)).body.data as WebhookRecord;
      expect(disabled).toMatchObject({ enabled: false, disabled_reason: expect.stringContaining('410 Gone') });
      expect((await replay(exhausted.id, request)).status).toBe(409);

      expect(
        (await request('PATCH', `/api/v1/webhooks/${endpoint.id}`, { headers: idem(), body: { enabled: true } })).body.data,
      ).toMatchObject({
        enabled: true,
        disabled_reason: null,
      });
      expect((await replay(exhausted.id, request)).status).toBe(202);
      const delivered = await waitForStatus(endpoint.id, 'delivered');
      expect(delivered).toMatchObject({ id: exhausted.id, replay_count: 1 });
      expect(delivered.attempts.map((a) => [a.series, a.attempt, a.status_code])).toEqual([
        [0, 1, 410],
        [1, 1, 200],
      ]);
      const received = receiver.requests('/gone');
      expect(received).toHaveLength(2);
      expect(received.map((r) => r.headers['herald-delivery-id'])).toEqual([exhausted.id, exhausted.id]);
    });

    it('deleting an endpoint while a retry waits ends the delivery without another request', async () => {
      receiver.respond('/flaky', () => ({ status: 500, body: 'down' }));
      const endpoint = await create(validBody({ url: receiver.url('/flaky'), events: ['contact.created'] }), request);
      expect((await addContact('flaky@example.com')).status).toBe(201);
      const failed = await waitForStatus(endpoint.id, 'failed');
      expect((await remove(endpoint.id, request)).status).toBe(200);

      // The retry falls due (2 s schedule): the actor finds nothing open for a deleted endpoint.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const [after] = await deliveriesOf(endpoint.id);
      expect(after).toMatchObject({ id: failed.id, status: 'exhausted', last_error: ENDPOINT_DELETED_ERROR });
      expect(after!.attempts).toHaveLength(1);
      expect(receiver.requests('/flaky')).toHaveLength(1);
    });
  });
});
