import * as v from 'valibot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Event, WebhookAttempt, WebhookDelivery, WebhookEndpoint } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { loadConfig } from '../../src/config.ts';
import { decryptSecret } from '../../src/crypto/secret-box.ts';
import { createLogger } from '../../src/logger.ts';
import { startApi } from '../../src/main-api.ts';
import { createApiKeysService } from '../../src/modules/auth/api-keys.service.ts';
import { EVENT_CATALOG, EVENT_TYPES } from '../../src/modules/events/events.schemas.ts';
import { createDeliveriesService } from '../../src/modules/webhooks/deliveries.service.ts';
import { WEBHOOK_ENDPOINT_WORKFLOW, webhookEndpointWorkflowId } from '../../workflows/webhook-endpoint.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { HeraldKind, HeraldOrgId } from '../../src/temporal/search-attributes.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient, expectError, fieldsOf, type ApiResponse } from '../support/http.ts';
import { insertDelivery, insertEndpoint, type DeliveryRecord, type WebhookRecord } from '../support/webhook-rows.ts';

const pageMeta = (response: ApiResponse) =>
  (response.body.meta as { pagination: { limit: number; has_more: boolean; next_cursor: string | null } }).pagination;

const validBody = (overrides: Record<string, unknown> = {}) => ({
  name: 'Orders service',
  url: 'https://receiver.example.com/herald',
  events: ['contact.created', 'email.delivered'],
  ...overrides,
});

describe('webhooks API', () => {
  let h: ApiHarness;
  let temporal: TemporalClientHandle;
  const started: string[] = [];

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

  const create = (body: unknown, options: { key?: string; headers?: Record<string, string> } = {}) =>
    h.request('POST', '/api/v1/webhooks', { headers: options.headers ?? idem(), body, ...(options.key ? { key: options.key } : {}) });

  describe('POST /api/v1/webhooks', () => {
    it('creates an endpoint and returns its signing secret once, stored only sealed', async () => {
      const response = await create(validBody({ description: 'Order sync' }));
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      const data = response.body.data as WebhookRecord;
      expect(data).toEqual({
        id: expect.stringMatching(/^[0-9a-f]{24}$/),
        name: 'Orders service',
        url: 'https://receiver.example.com/herald',
        description: 'Order sync',
        events: ['contact.created', 'email.delivered'],
        streams: null,
        enabled: true,
        disabled_reason: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      });
      expect(Buffer.from(data.secret!.slice('whsec_'.length), 'base64')).toHaveLength(32);

      const row = await scopeToOrg(h.stack.orm.em, h.workspace.org.id).findOneOrFail(WebhookEndpoint, { id: data.id });
      expect(row.secretEncrypted).toMatch(/^enc:v2:/);
      expect(row.secretEncrypted).not.toContain(data.secret!.slice(6));
      expect(decryptSecret(h.stack.config.encryptionKey!, row.secretEncrypted)).toBe(data.secret);
      expect(row.keyMode).toBe('test');
    });

    it('gives every endpoint its own secret', async () => {
      const a = (await create(validBody())).body.data as WebhookRecord;
      const b = (await create(validBody())).body.data as WebhookRecord;
      expect(a.secret).not.toBe(b.secret);
    });

    it('stores `*` alone when it is listed, and drops duplicate event types', async () => {
      const all = await create(validBody({ events: ['contact.created', '*'] }));
      expect((all.body.data as WebhookRecord).events).toEqual(['*']);
      const dup = await create(validBody({ events: ['email.sent', 'email.sent', 'contact.deleted'] }));
      expect((dup.body.data as WebhookRecord).events).toEqual(['email.sent', 'contact.deleted']);
    });

    it('accepts every catalog event type, and enabled: false', async () => {
      const response = await create(validBody({ events: [...EVENT_TYPES], enabled: false }));
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      expect(response.body.data).toMatchObject({ events: [...EVENT_TYPES], enabled: false, disabled_reason: null });
    });

    it('answers 400 listing every unknown event type', async () => {
      const response = await create(validBody({ events: ['contact.created', 'contact.renamed', 'email.reopened'] }));
      expectError(response, 400, 'invalid_request');
      const fields = fieldsOf(response);
      expect(fields.map((f) => [f.path, f.type])).toEqual([
        ['events.1', 'picklist'],
        ['events.2', 'picklist'],
      ]);
      expect(fields[0]!.message).toContain('"contact.renamed"');
      expect(fields[1]!.message).toContain('"email.reopened"');
      expect(response.body.error?.message).toContain('contact.renamed');
    });

    it('lets a test key register http URLs', async () => {
      const response = await create(validBody({ url: 'http://receiver.example.com/hook' }));
      expect(response.status, JSON.stringify(response.body)).toBe(201);
    });

    it('lets a live key register only https URLs', async () => {
      const { key } = await createApiKeysService({ orm: h.stack.orm }).createApiKey({
        orgId: h.workspace.org.id,
        scopes: ['all'],
        mode: 'live',
        rateLimitPerMinute: 100_000,
        burst: 10_000,
      });
      const refused = await create(validBody({ url: 'http://receiver.example.com/hook' }), { key });
      expectError(refused, 400, 'invalid_request');
      expect(refused.body.error?.details).toMatchObject({
        reason: 'HTTPS_REQUIRED',
        fields: [{ path: 'url', location: 'body', type: 'https_required' }],
      });
      const accepted = await create(validBody({ url: 'https://receiver.example.com/hook' }), { key });
      expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
      const row = await scopeToOrg(h.stack.orm.em, h.workspace.org.id).findOneOrFail(WebhookEndpoint, {
        id: (accepted.body.data as WebhookRecord).id,
      });
      expect(row.keyMode).toBe('live');
    });

    it.each([
      [{ name: 'x'.repeat(200) }],
      [{ name: '  padded  ' }],
      [{ url: `https://receiver.example.com/${'a'.repeat(2048 - 'https://receiver.example.com/'.length)}` }],
      [{ url: 'https://receiver.example.com:8443/path?query=1' }],
      [{ url: 'https://[2606:4700::1111]/hook' }],
      [{ events: Array.from({ length: 100 }, (_, i) => EVENT_TYPES[i % EVENT_TYPES.length]) }],
      [{ description: 'd'.repeat(500) }],
      [{ description: '' }],
    ])('accepts the bound %j', async (overrides) => {
      const response = await create(validBody(overrides));
      expect(response.status, JSON.stringify(response.body)).toBe(201);
    });

    it('trims the name', async () => {
      expect(((await create(validBody({ name: '  padded  ' }))).body.data as WebhookRecord).name).toBe('padded');
    });

    it.each([
      [{ name: '' }, 'name', 'min_length'],
      [{ name: '   ' }, 'name', 'min_length'],
      [{ name: 'x'.repeat(201) }, 'name', 'max_length'],
      [{ name: 5 }, 'name', 'string'],
      [{ url: `https://receiver.example.com/${'a'.repeat(2049 - 'https://receiver.example.com/'.length)}` }, 'url', 'max_length'],
      [{ url: '' }, 'url', 'min_length'],
      [{ url: 'receiver.example.com/hook' }, 'url', 'url'],
      [{ url: 'ftp://receiver.example.com/hook' }, 'url', 'check'],
      [{ url: 'javascript:alert(1)' }, 'url', 'check'],
      [{ url: 'https://user:pass@receiver.example.com/hook' }, 'url', 'check'],
      [{ url: 'https://token@receiver.example.com/hook' }, 'url', 'check'],
      [{ url: 'https://receiver.example.com/a b' }, 'url', 'regex'],
      [{ events: [] }, 'events', 'min_length'],
      [{ events: Array.from({ length: 101 }, () => 'contact.created') }, 'events', 'max_length'],
      [{ events: 'contact.created' }, 'events', 'array'],
      [{ events: [''] }, 'events.0', 'picklist'],
      [{ description: 'd'.repeat(501) }, 'description', 'max_length'],
      [{ enabled: 'yes' }, 'enabled', 'boolean'],
      [{ secret: 'whsec_mine' }, 'secret', 'unknown_field'],
      [{ url: undefined }, 'url', 'strict_object'],
      [{ events: undefined }, 'events', 'strict_object'],
    ])('answers 400 invalid_request for %j naming field %s (%s)', async (overrides, path, type) => {
      const body = Object.fromEntries(Object.entries(validBody(overrides)).filter(([, value]) => value !== undefined));
      const response = await create(body);
      expectError(response, 400, 'invalid_request');
      expect(fieldsOf(response), JSON.stringify(response.body)).toContainEqual(expect.objectContaining({ path, location: 'body', type }));
    });

    it('requires an Idempotency-Key, and a replay of the same request answers the same secret', async () => {
      expectError(await h.request('POST', '/api/v1/webhooks', { body: validBody() }), 400, 'invalid_request');
      const headers = idem();
      const first = await create(validBody({ name: 'Once' }), { headers });
      const again = await create(validBody({ name: 'Once' }), { headers });
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
      const rows = await scopeToOrg(h.stack.orm.em, h.workspace.org.id).find(WebhookEndpoint, { name: 'Once' });
      expect(rows).toHaveLength(1);
    });

    it('keeps the idempotent copy of the creation response sealed, never the plaintext secret', async () => {
      const headers = idem();
      const secret = ((await create(validBody({ name: 'Sealed copy' }), { headers })).body.data as WebhookRecord).secret!;
      const stored = await h.stack.orm.em
        .getConnection()
        .execute<{ body: string }[]>(`select response_body::text as body from idempotency_records where key = ?`, [
          headers['idempotency-key'],
        ]);
      expect(stored).toHaveLength(1);
      expect(stored[0]!.body).not.toContain(secret.slice(6));
      expect(stored[0]!.body).toContain('enc:v2:');
    });

    it('refuses internal targets when private targets are not allowed; names are left to connect time', async () => {
      const api = await startApi(loadConfig({ ...h.stack.env, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' }), createLogger('silent'));
      try {
        const request = apiClient(api.url, h.workspace.key);
        for (const url of [
          'http://169.254.169.254/latest/meta-data',
          'http://127.0.0.1:8080/hook',
          'http://2130706433/hook',
          'http://10.0.0.5/hook',
          'http://100.64.1.1/hook',
          'http://[::1]/hook',
          'http://[::ffff:127.0.0.1]/hook',
          'http://[fd00:ec2::254]/hook',
          'http://localhost:3000/hook',
          'http://api.localhost/hook',
          'http://0.0.0.0/hook',
        ]) {
          const response = await request('POST', '/api/v1/webhooks', { headers: idem(), body: validBody({ url }) });
          expectError(response, 400, 'invalid_request');
          expect(response.body.error?.details, url).toMatchObject({
            reason: 'FORBIDDEN_TARGET',
            fields: [{ path: 'url', type: 'forbidden_target' }],
          });
        }
        for (const url of ['https://receiver.example.com/hook', 'https://8.8.8.8/hook']) {
          const response = await request('POST', '/api/v1/webhooks', { headers: idem(), body: validBody({ url }) });
          expect(response.status, JSON.stringify(response.body)).toBe(201);
        }
      } finally {
        await api.close();
      }
      const allowed = await create(validBody({ url: 'http://127.0.0.1:8080/hook' }));
      expect(allowed.status, JSON.stringify(allowed.body)).toBe(201);
    });

    it('answers 503 service_unavailable without HERALD_ENCRYPTION_KEY and writes nothing', async () => {
      const env = Object.fromEntries(Object.entries(h.stack.env).filter(([name]) => name !== 'HERALD_ENCRYPTION_KEY'));
      const config = loadConfig(env);
      expect(config.encryptionKey).toBeUndefined();
      const api = await startApi(config, createLogger('silent'));
      const own = await createOrgWithKey(h.stack.orm, { scopes: ['all'] });
      try {
        const request = apiClient(api.url, own.key);
        const headers = idem();
        const response = await request('POST', '/api/v1/webhooks', { headers, body: validBody() });
        expectError(response, 503, 'service_unavailable');
        expect(response.body.error?.details).toEqual({ reason: 'ENCRYPTION_UNAVAILABLE' });
        const stored = await h.stack.orm.em
          .getConnection()
          .execute(`select 1 from idempotency_records where key = ?`, [headers['idempotency-key']]);
        expect(stored).toEqual([]);
        const list = await request('GET', '/api/v1/webhooks');
        expect(list.status, JSON.stringify(list.body)).toBe(200);
        expect(list.body.data).toEqual([]);
      } finally {
        await api.close();
      }
      expect(await scopeToOrg(h.stack.orm.em, own.org.id).count(WebhookEndpoint, {})).toBe(0);
    });
  });

  describe('GET /api/v1/webhooks', () => {
    it("lists the workspace's endpoints newest first, in keyset pages, without secrets", async () => {
      const own = await createOrgWithKey(h.stack.orm, { scopes: ['all'], rateLimitPerMinute: 100_000, burst: 10_000 });
      const request = apiClient(h.api.url, own.key);
      const created: WebhookRecord[] = [];
      for (let i = 0; i < 5; i += 1) {
        const response = await request('POST', '/api/v1/webhooks', { headers: idem(), body: validBody({ name: `hook ${i}` }) });
        created.push(response.body.data as WebhookRecord);
      }
      const seen: WebhookRecord[] = [];
      let cursor: string | null = null;
      do {
        const query: string = `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const response = await request('GET', `/api/v1/webhooks${query}`);
        expect(response.status, JSON.stringify(response.body)).toBe(200);
        seen.push(...(response.body.data as WebhookRecord[]));
        cursor = pageMeta(response).next_cursor;
      } while (cursor);
      expect(seen.map((w) => w.id)).toEqual(created.map((w) => w.id).reverse());
      for (const [i, record] of seen.entries()) {
        const { secret, ...withoutSecret } = created[created.length - 1 - i]!;
        expect(secret).toBeDefined();
        expect(record).toEqual(withoutSecret);
      }
      const other = await h.request('GET', '/api/v1/webhooks?limit=100');
      expect((other.body.data as WebhookRecord[]).map((w) => w.id)).not.toContain(created[0]!.id);
    });

    it.each(['0', '101', 'x'])('answers 400 for limit=%s', async (limit) => {
      expectError(await h.request('GET', `/api/v1/webhooks?limit=${limit}`), 400, 'invalid_request');
    });
  });

  describe('the signing secret never appears after creation, nor in logs', () => {
    it('is absent from every later response and every api log line', async () => {
      const lines: string[] = [];
      const api = await startApi(
        h.stack.config,
        createLogger('debug', {}, (line) => lines.push(line)),
      );
      try {
        const request = apiClient(api.url, h.workspace.key);
        const created = await request('POST', '/api/v1/webhooks', { headers: idem(), body: validBody({ name: 'Logged' }) });
        expect(created.status).toBe(201);
        const { id, secret } = created.body.data as WebhookRecord;
        await insertDelivery(h.stack.orm, h.workspace.org.id, { webhookId: id, status: 'exhausted' });
        const later: ApiResponse[] = [
          await request('GET', '/api/v1/webhooks?limit=100'),
          await request('GET', `/api/v1/webhooks/deliveries?webhook_id=${id}`),
          await request('POST', '/api/v1/webhooks', { headers: idem(), body: validBody({ events: ['nope'] }) }),
        ];
        const [delivery] = later[1]!.body.data as DeliveryRecord[];
        const replay = await request('POST', `/api/v1/webhooks/deliveries/${delivery!.id}/replay`, { headers: idem() });
        expect(replay.status, JSON.stringify(replay.body)).toBe(202);
        started.push(webhookEndpointWorkflowId(id));
        later.push(replay);
        for (const response of later) {
          expect(JSON.stringify(response.body)).not.toContain(secret!.slice(6));
          expect(JSON.stringify(response.body)).not.toContain('"secret"');
        }
        expect(lines.length).toBeGreaterThan(0);
        expect(lines.join('\n')).not.toContain(secret!.slice(6));
      } finally {
        await api.close();
      }
    });
  });

  describe('GET /api/v1/webhooks/deliveries', () => {
    let own: Awaited<ReturnType<typeof createOrgWithKey>>;
    let request: ReturnType<typeof apiClient>;
    let endpointA: WebhookEndpoint;
    let endpointB: WebhookEndpoint;
    const deliveries: WebhookDelivery[] = [];

    beforeAll(async () => {
      own = await createOrgWithKey(h.stack.orm, { scopes: ['all'], rateLimitPerMinute: 100_000, burst: 10_000 });
      request = apiClient(h.api.url, own.key);
      endpointA = await insertEndpoint(h.stack.orm, own.org.id);
      endpointB = await insertEndpoint(h.stack.orm, own.org.id);
      const base = Date.now() - 60_000;
      const plan = [
        [endpointA, 'delivered', 1],
        [endpointA, 'exhausted', 3],
        [endpointB, 'failed', 2],
        [endpointB, 'queued', 0],
        [endpointA, 'delivered', 2],
      ] as const;
      for (const [i, [endpoint, status, attempts]] of plan.entries()) {
        deliveries.push(
          await insertDelivery(h.stack.orm, own.org.id, { webhookId: endpoint.id, status, attempts, createdAt: new Date(base + i * 1000) }),
        );
      }
    });

    const list = async (query = '') => {
      const response = await request('GET', `/api/v1/webhooks/deliveries${query}`);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      return response;
    };
    const ids = (response: ApiResponse) => (response.body.data as DeliveryRecord[]).map((d) => d.id);

    it('lists deliveries newest first with the delivery record and its attempts', async () => {
      const response = await list();
      expect(ids(response)).toEqual(deliveries.map((d) => d.id).reverse());
      const exhausted = (response.body.data as DeliveryRecord[]).find((d) => d.id === deliveries[1]!.id)!;
      expect(exhausted).toEqual({
        id: deliveries[1]!.id,
        webhook_id: endpointA.id,
        event_id: deliveries[1]!.eventId,
        event_type: 'contact.created',
        status: 'exhausted',
        attempt_count: 3,
        next_attempt_at: null,
        last_response_status: 500,
        last_response_excerpt: 'boom',
        last_error: 'http_error: 500',
        replay_count: 0,
        created_at: deliveries[1]!.createdAt.toISOString(),
        updated_at: expect.any(String),
        attempts: [1, 2, 3].map((n) => ({
          series: 0,
          attempt: n,
          started_at: expect.any(String),
          status_code: 500,
          latency_ms: 10 + n,
          error: 'http_error: 500',
        })),
      });
      const queued = (response.body.data as DeliveryRecord[]).find((d) => d.id === deliveries[3]!.id)!;
      expect(queued).toMatchObject({ status: 'queued', attempts: [], attempt_count: 0, next_attempt_at: expect.any(String) });
    });

    it('filters by webhook_id, by status, and by both', async () => {
      expect(ids(await list(`?webhook_id=${endpointA.id}`))).toEqual([deliveries[4], deliveries[1], deliveries[0]].map((d) => d!.id));
      expect(ids(await list(`?webhook_id=${endpointA.id.toUpperCase()}`))).toHaveLength(3);
      expect(ids(await list('?status=delivered'))).toEqual([deliveries[4], deliveries[0]].map((d) => d!.id));
      expect(ids(await list('?status=failed'))).toEqual([deliveries[2]!.id]);
      expect(ids(await list(`?webhook_id=${endpointB.id}&status=queued`))).toEqual([deliveries[3]!.id]);
      expect(ids(await list(`?webhook_id=${endpointB.id}&status=delivering`))).toEqual([]);
    });

    it("answers an empty list for an unknown webhook_id or another workspace's", async () => {
      expect(ids(await list(`?webhook_id=${'f'.repeat(24)}`))).toEqual([]);
      const foreign = await insertEndpoint(h.stack.orm, h.workspace.org.id);
      await insertDelivery(h.stack.orm, h.workspace.org.id, { webhookId: foreign.id });
      expect(ids(await list(`?webhook_id=${foreign.id}`))).toEqual([]);
      expect(ids(await list('?limit=100'))).toHaveLength(deliveries.length);
    });

    it('pages with a cursor', async () => {
      const first = await list('?limit=2');
      expect(pageMeta(first)).toMatchObject({ limit: 2, has_more: true });
      const second = await list(`?limit=2&cursor=${encodeURIComponent(pageMeta(first).next_cursor!)}`);
      const third = await list(`?limit=2&cursor=${encodeURIComponent(pageMeta(second).next_cursor!)}`);
      expect(pageMeta(third)).toMatchObject({ has_more: false, next_cursor: null });
      expect([...ids(first), ...ids(second), ...ids(third)]).toEqual(deliveries.map((d) => d.id).reverse());
    });

    it.each([
      ['?status=pending', 'status', 'picklist'],
      ['?status=DELIVERED', 'status', 'picklist'],
      ['?status=', 'status', 'picklist'],
      ['?webhook_id=abc', 'webhook_id', 'regex'],
      ['?webhook_id=' + 'g'.repeat(24), 'webhook_id', 'regex'],
      ['?limit=0', 'limit', 'min_value'],
      ['?limit=101', 'limit', 'max_value'],
      ['?cursor=garbage', 'cursor', null],
    ])('answers 400 invalid_request for %s', async (query, path, type) => {
      const response = await request('GET', `/api/v1/webhooks/deliveries${query}`);
      expectError(response, 400, 'invalid_request');
      if (type) expect(fieldsOf(response)).toContainEqual(expect.objectContaining({ path, location: 'query', type }));
    });

    it("shows the latest 50 of a delivery's 52 attempts (4 series of 13), oldest first", async () => {
      const other = await createOrgWithKey(h.stack.orm, { scopes: ['all'] });
      const delivery = await insertDelivery(h.stack.orm, other.org.id, { status: 'exhausted', attempts: 13 });
      const em = scopeToOrg(h.stack.orm.em, other.org.id);
      for (let series = 1; series <= 3; series += 1) {
        for (let n = 1; n <= 13; n += 1) {
          em.create(WebhookAttempt, {
            orgId: other.org.id,
            deliveryId: delivery.id,
            series,
            attemptNumber: n,
            startedAt: new Date(),
            statusCode: 503,
            latencyMs: 5,
            error: 'http_error: 503',
            responseExcerpt: null,
          });
        }
      }
      await em.flush();
      const response = await apiClient(h.api.url, other.key)('GET', '/api/v1/webhooks/deliveries');
      const [record] = response.body.data as DeliveryRecord[];
      expect(record!.attempts).toHaveLength(50);
      expect(record!.attempts[0]).toMatchObject({ series: 0, attempt: 3 });
      expect(record!.attempts.at(-1)).toMatchObject({ series: 3, attempt: 13 });
    });
  });

  describe('POST /api/v1/webhooks/deliveries/{id}/replay', () => {
    const replay = (id: string, headers = idem()) => h.request('POST', `/api/v1/webhooks/deliveries/${id}/replay`, { headers });
    const row = (id: string) => scopeToOrg(h.stack.orm.em, h.workspace.org.id).findOneOrFail(WebhookDelivery, { id });

    it.each(['delivered', 'exhausted', 'failed'] as const)(
      'replays a %s delivery: same ids, queued and due now, replay_count + 1, its endpoint actor woken',
      async (status) => {
        const delivery = await insertDelivery(h.stack.orm, h.workspace.org.id, { status, attempts: 2 });
        const before = Date.now();
        const response = await replay(delivery.id);
        expect(response.status, JSON.stringify(response.body)).toBe(202);
        const data = response.body.data as DeliveryRecord;
        expect(data).toMatchObject({
          id: delivery.id,
          event_id: delivery.eventId,
          webhook_id: delivery.webhookId,
          status: 'queued',
          replay_count: 1,
          attempt_count: 2,
        });
        expect(data.attempts).toHaveLength(2);
        expect(Date.parse(data.next_attempt_at!)).toBeGreaterThanOrEqual(before - 1000);

        const stored = await row(delivery.id);
        expect(stored).toMatchObject({ status: 'queued', replayCount: 1, seriesAttempts: 0, eventId: delivery.eventId });

        const workflowId = webhookEndpointWorkflowId(delivery.webhookId);
        started.push(workflowId);
        const description = await temporal.client.workflow.getHandle(workflowId).describe();
        expect(description.type).toBe(WEBHOOK_ENDPOINT_WORKFLOW);
        expect(description.taskQueue).toBe(h.stack.config.temporal.taskQueue);
        expect(description.status.name).toBe('RUNNING');
        expect(description.typedSearchAttributes.get(HeraldOrgId)).toBe(h.workspace.org.id);
        expect(description.typedSearchAttributes.get(HeraldKind)).toBe('webhook-endpoint');
        const history = await temporal.client.workflow.getHandle(workflowId).fetchHistory();
        const input = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
        expect(JSON.parse(Buffer.from(input!).toString())).toEqual({ orgId: h.workspace.org.id, endpointId: delivery.webhookId });
      },
    );

    it('answers 409 conflict for a delivery still queued or delivering', async () => {
      for (const status of ['queued', 'delivering'] as const) {
        const delivery = await insertDelivery(h.stack.orm, h.workspace.org.id, { status });
        const response = await replay(delivery.id);
        expectError(response, 409, 'conflict');
        expect(response.body.error?.details).toEqual({ reason: 'DELIVERY_IN_PROGRESS', status });
        expect(await row(delivery.id)).toMatchObject({ status, replayCount: 0 });
      }
    });

    it('answers 409 for a second replay while the first is queued, and counts series on', async () => {
      const delivery = await insertDelivery(h.stack.orm, h.workspace.org.id, { status: 'exhausted' });
      expect((await replay(delivery.id)).status).toBe(202);
      started.push(webhookEndpointWorkflowId(delivery.webhookId));
      expectError(await replay(delivery.id), 409, 'conflict');
      await scopeToOrg(h.stack.orm.em, h.workspace.org.id).nativeUpdate(WebhookDelivery, { id: delivery.id }, { status: 'delivered' });
      const second = await replay(delivery.id);
      expect(second.body.data).toMatchObject({ status: 'queued', replay_count: 2 });
      expect((await temporal.client.workflow.getHandle(webhookEndpointWorkflowId(delivery.webhookId)).describe()).status.name).toBe(
        'RUNNING',
      );
    });

    it('lets one of two concurrent replays through', async () => {
      const delivery = await insertDelivery(h.stack.orm, h.workspace.org.id, { status: 'delivered' });
      const responses = await Promise.all(Array.from({ length: 5 }, () => replay(delivery.id)));
      started.push(webhookEndpointWorkflowId(delivery.webhookId));
      expect(responses.map((r) => r.status).sort()).toEqual([202, 409, 409, 409, 409]);
      expect(await row(delivery.id)).toMatchObject({ replayCount: 1, status: 'queued' });
    });

    it('replays a failed delivery waiting for its retry at once, as a new series (the old retry time is dropped)', async () => {
      const delivery = await insertDelivery(h.stack.orm, h.workspace.org.id, { status: 'failed' });
      await scopeToOrg(h.stack.orm.em, h.workspace.org.id).nativeUpdate(
        WebhookDelivery,
        { id: delivery.id },
        { nextAttemptAt: new Date(Date.now() + 3_600_000) },
      );
      started.push(webhookEndpointWorkflowId(delivery.webhookId));
      const before = Date.now();
      expect((await replay(delivery.id)).status).toBe(202);
      const stored = await row(delivery.id);
      expect(stored).toMatchObject({ status: 'queued', replayCount: 1 });
      expect(stored.nextAttemptAt!.getTime()).toBeLessThanOrEqual(Date.now());
      expect(stored.nextAttemptAt!.getTime()).toBeGreaterThanOrEqual(before - 1000);
    });

    it('answers 409 when the endpoint is disabled', async () => {
      const endpoint = await insertEndpoint(h.stack.orm, h.workspace.org.id, {
        enabled: false,
        disabledReason: 'The receiver answered 410 Gone.',
      });
      const delivery = await insertDelivery(h.stack.orm, h.workspace.org.id, { webhookId: endpoint.id, status: 'exhausted' });
      const response = await replay(delivery.id);
      expectError(response, 409, 'conflict');
      expect(response.body.error?.details).toEqual({ reason: 'ENDPOINT_DISABLED', webhook_id: endpoint.id });
    });

    it('replays the stored answer for the same Idempotency-Key without a second replay', async () => {
      const delivery = await insertDelivery(h.stack.orm, h.workspace.org.id, { status: 'delivered' });
      const headers = idem();
      const first = await replay(delivery.id, headers);
      started.push(webhookEndpointWorkflowId(delivery.webhookId));
      const again = await replay(delivery.id, headers);
      expect(again.status).toBe(202);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
      expect((await row(delivery.id)).replayCount).toBe(1);
      expectError(await h.request('POST', `/api/v1/webhooks/deliveries/${delivery.id}/replay`), 400, 'invalid_request');
    });

    it("answers 404 for an unknown id or another workspace's, 400 for a malformed id", async () => {
      expectError(await replay('a'.repeat(24)), 404, 'not_found');
      const other = await createOrgWithKey(h.stack.orm, { scopes: ['all'] });
      const foreign = await insertDelivery(h.stack.orm, other.org.id, { status: 'delivered' });
      expectError(await replay(foreign.id), 404, 'not_found');
      expectError(await replay('not-an-id'), 400, 'invalid_request');
      expect((await scopeToOrg(h.stack.orm.em, other.org.id).findOneOrFail(WebhookDelivery, { id: foreign.id })).replayCount).toBe(0);
    });

    it('accepts the replay when Temporal does not take the wake-up: the row stays queued and due for the reconciler', async () => {
      const warnings: string[] = [];
      const unavailable = () => Promise.reject(new Error('14 UNAVAILABLE: connection refused'));
      const service = createDeliveriesService({
        orm: h.stack.orm,
        temporal: {
          withDeadline: (_deadline: number | Date, work: () => Promise<unknown>) => work(),
          workflow: { signalWithStart: unavailable },
        } as never,
        config: h.stack.config,
        logger: createLogger('warn', {}, (line) => warnings.push(line)),
      });
      const delivery = await insertDelivery(h.stack.orm, h.workspace.org.id, { status: 'failed' });
      const result = await service.replayDelivery(h.workspace.org.id, delivery.id);
      expect(result.delivery).toMatchObject({ status: 'queued', replayCount: 1 });
      const stored = await row(delivery.id);
      expect(stored.status).toBe('queued');
      expect(Math.abs(stored.nextAttemptAt!.getTime() - Date.now())).toBeLessThan(10_000);
      expect(warnings.join('\n')).toContain('the webhook reconciler will wake it');
    });
  });

  describe('event catalog', () => {
    it('is served at /docs/events with every type and its data fields', async () => {
      const response = await fetch(`${h.api.url}/docs/events`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/text\/html/);
      const html = await response.text();
      for (const event of EVENT_CATALOG) expect(html).toContain(`id="${event.type}"`);
      expect(html).toContain('<code>changed_fields</code>');
      expect(html).toContain('Herald-Signature');
      expect(await (await fetch(`${h.api.url}/docs`)).text()).toContain('/docs/events');
    });

    it('is in the OpenAPI document as webhooks, one per event type', async () => {
      const document = (await (await fetch(`${h.api.url}/api/v1/openapi.json`)).json()) as {
        webhooks: Record<
          string,
          { post: { requestBody: { content: { 'application/json': { schema: { properties: Record<string, unknown> } } } } } }
        >;
      };
      expect(Object.keys(document.webhooks)).toEqual([...EVENT_TYPES]);
      const schema = document.webhooks['contact.created']!.post.requestBody.content['application/json'].schema;
      expect(Object.keys(schema.properties).sort()).toEqual(['api_version', 'created_at', 'data', 'id', 'object', 'type']);
      expect(schema.properties.type).toEqual({ const: 'contact.created' });
    });

    it('describes the data the contact events really carry', async () => {
      const own = await createOrgWithKey(h.stack.orm, { scopes: ['all'] });
      const request = apiClient(h.api.url, own.key);
      const created = await request('POST', '/api/v1/contacts', { headers: idem(), body: { email: 'catalog@example.com' } });
      const id = (created.body.data as { _id: string })._id;
      await request('PATCH', `/api/v1/contacts/${id}`, { headers: idem(), body: { first_name: 'Cat', status: 'unsubscribed' } });
      await request('DELETE', `/api/v1/contacts/${id}`, { headers: idem() });
      const events = await scopeToOrg(h.stack.orm.em, own.org.id).find(Event, {}, { orderBy: { createdAt: 'asc', id: 'asc' } });
      expect(events.map((e) => e.type)).toEqual(['contact.created', 'contact.updated', 'contact.unsubscribed', 'contact.deleted']);
      for (const event of events) {
        const definition = EVENT_CATALOG.find((d) => d.type === event.type)!;
        const result = v.safeParse(definition.data, event.data);
        expect(result.success, `${event.type}: ${JSON.stringify(result.issues)}`).toBe(true);
      }
    });
  });
});
