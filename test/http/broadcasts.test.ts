import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broadcast, Domain, Event, Segment } from '../../db/entities/index.ts';
import { scopeToOrg, type MikroORM } from '../../db/orm.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey, unique } from '../support/factories.ts';
import { apiClient, expectError, type ApiResponse } from '../support/http.ts';

const DAY = 24 * 3600 * 1000;
const ZERO_METRICS = { recipients: 0, sent: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0, complained: 0, unsubscribed: 0 };

async function createSegment(orm: MikroORM, orgId: string): Promise<string> {
  const em = scopeToOrg(orm.em, orgId);
  const segment = em.create(Segment, { orgId, name: unique('segment') });
  await em.flush();
  return segment.id;
}

async function createDomain(orm: MikroORM, orgId: string, name: string, status: 'pending' | 'verified'): Promise<void> {
  const em = scopeToOrg(orm.em, orgId);
  em.create(Domain, {
    orgId,
    domain: name,
    status,
    verifiedAt: status === 'verified' ? new Date() : null,
    dkimPublicKey: 'test-public-key',
    dkimPrivateKeyEncrypted: 'test-sealed-key',
  });
  await em.flush();
}

type Fields = { path: string; type: string; location: string }[];
const fieldsOf = (response: ApiResponse): Fields => (response.body.error?.details as { fields: Fields }).fields;

describe('broadcasts', () => {
  let h: ApiHarness;
  let segmentA = '';
  let segmentB = '';
  let foreignSegment = '';
  const domain = `${unique('d').toLowerCase()}.example.com`;
  const pendingDomain = `pending-${domain}`;
  const foreignDomain = `foreign-${domain}`;

  /** A body that passes every rule for the harness workspace. */
  const valid = (overrides: Record<string, unknown> = {}) => ({
    name: 'November newsletter',
    subject: 'What is new',
    from_name: 'Herald Team',
    from_email: `news@${domain}`,
    segment_ids: [segmentA],
    ...overrides,
  });

  const create = (body: unknown) => h.request('POST', '/api/v1/outbox/broadcasts', { headers: idem(), body });

  beforeAll(async () => {
    h = await startApiHarness();
    const orgId = h.workspace.org.id;
    segmentA = await createSegment(h.stack.orm, orgId);
    segmentB = await createSegment(h.stack.orm, orgId);
    await createDomain(h.stack.orm, orgId, domain, 'verified');
    await createDomain(h.stack.orm, orgId, pendingDomain, 'pending');
    const other = await createOrgWithKey(h.stack.orm);
    foreignSegment = await createSegment(h.stack.orm, other.org.id);
    await createDomain(h.stack.orm, other.org.id, foreignDomain, 'verified');
  });
  afterAll(() => h.close());

  describe('POST /api/v1/outbox/broadcasts', () => {
    it('creates a draft with the spec fields, zero metrics and no schedule', async () => {
      const response = await create({
        name: '  Launch  ',
        subject: 'Big news',
        preview_text: 'Read all about it',
        from_name: 'Ada',
        from_email: `Ada@${domain.toUpperCase()}`,
        reply_to: `replies@${domain}`,
        segment_ids: [segmentA, segmentB, segmentA],
        html: '<p>Hello</p>',
        plain_text: 'Hello',
      });
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      expect(response.body.data).toEqual({
        _id: expect.stringMatching(/^[0-9a-f]{24}$/),
        name: 'Launch',
        subject: 'Big news',
        previewText: 'Read all about it',
        fromName: 'Ada',
        fromEmail: `Ada@${domain}`,
        groupIds: [segmentA, segmentB],
        status: 'draft',
        scheduledAt: null,
        metrics: ZERO_METRICS,
        createdAt: expect.any(String),
        stream: 'broadcast',
      });
      const id = (response.body.data as { _id: string })._id;
      const stored = await scopeToOrg(h.stack.orm.em, h.workspace.org.id).findOneOrFail(Broadcast, { id });
      expect(stored).toMatchObject({ replyTo: `replies@${domain}`, html: '<p>Hello</p>', plainText: 'Hello' });
    });

    it('writes broadcast.created in the same transaction, with the serialized broadcast', async () => {
      const response = await create(valid({ name: 'Evented' }));
      const id = (response.body.data as { _id: string })._id;
      const events = await scopeToOrg(h.stack.orm.em, h.workspace.org.id).find(Event, { type: 'broadcast.created' });
      const event = events.find((e) => (e.data.broadcast as { _id: string })._id === id);
      expect(event?.data.broadcast).toEqual(response.body.data);
    });

    it('accepts a from address on a domain that is not verified yet (drafts may precede DNS)', async () => {
      const response = await create(valid({ from_email: `hello@${pendingDomain}` }));
      expect(response.status, JSON.stringify(response.body)).toBe(201);
    });

    it('keeps scheduled_at (29 days 23 hours ahead) as a UTC timestamp; the broadcast stays a draft', async () => {
      const at = new Date(Date.now() + 29 * DAY + 23 * 3600 * 1000);
      at.setUTCMilliseconds(0);
      const offset = at.toISOString().replace('Z', '+00:00');
      const response = await create(valid({ scheduled_at: offset }));
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      expect(response.body.data).toMatchObject({ status: 'draft', scheduledAt: at.toISOString() });
    });

    it('accepts a time zone offset and stores the instant', async () => {
      const at = new Date(Date.now() + 2 * DAY);
      at.setUTCMilliseconds(0);
      const local = new Date(at.getTime() + 2 * 3600 * 1000).toISOString().replace('.000Z', '+02:00');
      const response = await create(valid({ scheduled_at: local }));
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      expect((response.body.data as { scheduledAt: string }).scheduledAt).toBe(at.toISOString());
    });

    it.each([
      ['30 days and 1 minute ahead', 30 * DAY + 60_000, 'too_far_ahead'],
      ['1 minute ago', -60_000, 'in_past'],
      ['a year ago', -365 * DAY, 'in_past'],
    ])('answers 400 for scheduled_at %s', async (_name, offset, type) => {
      const response = await create(valid({ scheduled_at: new Date(Date.now() + offset).toISOString() }));
      expectError(response, 400, 'invalid_request');
      expect(response.body.error?.details?.reason).toBe('SCHEDULE_OUT_OF_RANGE');
      expect(fieldsOf(response)).toEqual([expect.objectContaining({ path: 'scheduled_at', location: 'body', type })]);
    });

    it("answers 400 naming segment ids that are not the workspace's, by position", async () => {
      const missing = 'f'.repeat(24);
      const response = await create(valid({ segment_ids: [segmentA, foreignSegment, missing, 'not-an-id'] }));
      expectError(response, 400, 'invalid_request');
      expect(response.body.error?.details).toMatchObject({
        reason: 'UNKNOWN_SEGMENT',
        unknown_segment_ids: [foreignSegment, missing, 'not-an-id'],
      });
      expect(fieldsOf(response).map((f) => [f.path, f.type])).toEqual([
        ['segment_ids.1', 'unknown_segment'],
        ['segment_ids.2', 'unknown_segment'],
        ['segment_ids.3', 'unknown_segment'],
      ]);
    });

    it.each([
      ["another workspace's domain", () => `news@${foreignDomain}`],
      ['an unknown domain', () => 'news@nowhere.example.org'],
      ['a subdomain of a workspace domain', () => `news@sub.${domain}`],
    ])('answers 400 DOMAIN_NOT_FOUND for from_email on %s', async (_name, from) => {
      const response = await create(valid({ from_email: from() }));
      expectError(response, 400, 'invalid_request');
      expect(response.body.error?.details?.reason).toBe('DOMAIN_NOT_FOUND');
      expect(fieldsOf(response)).toEqual([expect.objectContaining({ path: 'from_email', location: 'body', type: 'unknown_domain' })]);
    });

    it('lists every business problem at once; reason names the first', async () => {
      const response = await create(
        valid({
          from_email: 'x@nowhere.example.org',
          segment_ids: [foreignSegment],
          scheduled_at: new Date(Date.now() - 60_000).toISOString(),
        }),
      );
      expectError(response, 400, 'invalid_request');
      expect(response.body.error?.details?.reason).toBe('DOMAIN_NOT_FOUND');
      expect(fieldsOf(response).map((f) => f.path)).toEqual(['from_email', 'segment_ids.0', 'scheduled_at']);
    });

    it('writes nothing when it refuses', async () => {
      const em = scopeToOrg(h.stack.orm.em, h.workspace.org.id);
      const before = [await em.count(Broadcast, {}), await em.count(Event, { type: 'broadcast.created' })];
      await create(valid({ name: 'Refused', segment_ids: [foreignSegment] }));
      await create(valid({ name: 'Refused', from_email: `a@${foreignDomain}` }));
      const after = [await em.fork().count(Broadcast, {}), await em.fork().count(Event, { type: 'broadcast.created' })];
      expect(after).toEqual(before);
    });

    it.each([
      ['name', 'x'.repeat(200)],
      ['subject', 'x'.repeat(500)],
      ['preview_text', 'x'.repeat(200)],
      ['preview_text', ''],
      ['from_name', 'x'.repeat(100)],
      ['html', 'x'.repeat(500_000)],
      ['plain_text', 'x'.repeat(200_000)],
      ['name', 'x'],
      ['subject', 'x'],
      ['from_name', 'x'],
    ])('accepts %s at its bound (%#)', async (field, value) => {
      const response = await create(valid({ [field]: value }));
      expect(response.status, JSON.stringify(response.body).slice(0, 500)).toBe(201);
    });

    it('accepts 100 segment ids (duplicates collapse)', async () => {
      const response = await create(valid({ segment_ids: Array.from({ length: 100 }, (_, i) => (i % 2 ? segmentA : segmentB)) }));
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      expect((response.body.data as { groupIds: string[] }).groupIds).toEqual([segmentB, segmentA]);
    });

    it.each([
      [{ name: undefined }, 'name', 'object'],
      [{ name: '' }, 'name', 'min_length'],
      [{ name: '   ' }, 'name', 'min_length'],
      [{ name: 'x'.repeat(201) }, 'name', 'max_length'],
      [{ name: 5 }, 'name', 'string'],
      [{ subject: undefined }, 'subject', 'object'],
      [{ subject: '' }, 'subject', 'min_length'],
      [{ subject: 'x'.repeat(501) }, 'subject', 'max_length'],
      [{ subject: 'a\r\nBcc: victim@example.com' }, 'subject', 'regex'],
      [{ preview_text: 'x'.repeat(201) }, 'preview_text', 'max_length'],
      [{ from_name: undefined }, 'from_name', 'object'],
      [{ from_name: '' }, 'from_name', 'min_length'],
      [{ from_name: 'x'.repeat(101) }, 'from_name', 'max_length'],
      [{ from_name: 'Ada\nLovelace' }, 'from_name', 'regex'],
      [{ from_email: undefined }, 'from_email', 'object'],
      [{ from_email: 'not-an-email' }, 'from_email', 'email'],
      [{ reply_to: 'nope' }, 'reply_to', 'email'],
      [{ segment_ids: undefined }, 'segment_ids', 'object'],
      [{ segment_ids: [] }, 'segment_ids', 'min_length'],
      [{ segment_ids: 'abc' }, 'segment_ids', 'array'],
      [{ segment_ids: [''] }, 'segment_ids.0', 'min_length'],
      [{ segment_ids: [7] }, 'segment_ids.0', 'string'],
      [{ segment_ids: Array.from({ length: 101 }, () => 'a'.repeat(24)) }, 'segment_ids', 'max_length'],
      [{ html: 'x'.repeat(500_001) }, 'html', 'max_length'],
      [{ plain_text: 'x'.repeat(200_001) }, 'plain_text', 'max_length'],
      [{ scheduled_at: 'tomorrow 9am' }, 'scheduled_at', 'regex'],
      [{ scheduled_at: '2030-01-01' }, 'scheduled_at', 'regex'],
      [{ scheduled_at: '2030-01-01T09:00:00' }, 'scheduled_at', 'regex'],
      [{ scheduled_at: '2030-02-31T09:00:00Z' }, 'scheduled_at', 'check'],
      [{ scheduled_at: 1_900_000_000 }, 'scheduled_at', 'string'],
      [{ groupIds: ['x'] }, 'groupIds', 'unknown_field'],
      [{ status: 'sent' }, 'status', 'unknown_field'],
    ])('answers 400 invalid_request for %j naming field %s', async (overrides, path, type) => {
      const body: Record<string, unknown> = valid(overrides);
      for (const [key, value] of Object.entries(overrides)) if (value === undefined) delete body[key];
      const response = await create(body);
      expectError(response, 400, 'invalid_request');
      expect(fieldsOf(response), JSON.stringify(fieldsOf(response))).toContainEqual(
        expect.objectContaining({ path, location: 'body', ...(type === 'object' ? {} : { type }) }),
      );
    });
  });

  describe('GET /api/v1/outbox/broadcasts', () => {
    it("lists the workspace's broadcasts newest first, in pages, and none of another workspace", async () => {
      const own = await createOrgWithKey(h.stack.orm, { scopes: ['all'], rateLimitPerMinute: 100_000, burst: 10_000 });
      const segment = await createSegment(h.stack.orm, own.org.id);
      const ownDomain = `list-${domain}`;
      await createDomain(h.stack.orm, own.org.id, ownDomain, 'verified');
      const request = apiClient(h.api.url, own.key);
      const created: string[] = [];
      for (let i = 0; i < 5; i += 1) {
        const response = await request('POST', '/api/v1/outbox/broadcasts', {
          headers: idem(),
          body: { name: `B${i}`, subject: 's', from_name: 'f', from_email: `a@${ownDomain}`, segment_ids: [segment] },
        });
        expect(response.status, JSON.stringify(response.body)).toBe(201);
        created.push((response.body.data as { _id: string })._id);
      }
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const query: string = `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const response = await request('GET', `/api/v1/outbox/broadcasts${query}`);
        expect(response.status, JSON.stringify(response.body)).toBe(200);
        const page = response.body.data as { _id: string; status: string; metrics: unknown }[];
        for (const item of page) expect(item).toMatchObject({ status: 'draft', metrics: ZERO_METRICS });
        seen.push(...page.map((b) => b._id));
        cursor = (response.body.meta as { pagination: { next_cursor: string | null } }).pagination.next_cursor;
      } while (cursor);
      expect(seen).toEqual([...created].reverse());
    });

    it("serializes exactly the spec fields and Herald's stream extension", async () => {
      const response = await h.request('GET', '/api/v1/outbox/broadcasts?limit=1');
      expect(response.status).toBe(200);
      const [item] = response.body.data as Record<string, unknown>[];
      expect(Object.keys(item!).sort()).toEqual([
        '_id',
        'createdAt',
        'fromEmail',
        'fromName',
        'groupIds',
        'metrics',
        'name',
        'previewText',
        'scheduledAt',
        'status',
        'stream',
        'subject',
      ]);
    });

    it.each(['0', '101', 'x'])('answers 400 for limit=%s', async (limit) => {
      expectError(await h.request('GET', `/api/v1/outbox/broadcasts?limit=${limit}`), 400, 'invalid_request');
    });
  });
});
