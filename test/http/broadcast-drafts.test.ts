import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broadcast } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { createSegmentsService } from '../../src/modules/segments/segments.service.ts';
import { createStreamsService } from '../../src/modules/streams/streams.service.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey, unique } from '../support/factories.ts';
import { apiClient, expectError, fieldsOf, type ApiResponse } from '../support/http.ts';
import { addSendingDomain } from '../support/sending.ts';

type BroadcastBody = {
  _id: string;
  name: string;
  subject: string;
  groupIds: string[];
  status: string;
  scheduledAt: string | null;
  stream: string;
};

const reasonOf = (response: ApiResponse) => (response.body.error?.details as { reason?: string } | undefined)?.reason;

/** PATCH and DELETE /outbox/broadcasts/{id} (Herald extensions) and the `stream` of a broadcast. */
describe('broadcast drafts: change, delete, stream', () => {
  let h: ApiHarness;
  let domain = '';
  let segmentA = '';
  let segmentB = '';

  const create = (overrides: Record<string, unknown> = {}) =>
    h.request('POST', '/api/v1/outbox/broadcasts', {
      headers: idem(),
      body: {
        name: unique('Draft'),
        subject: 'Hello',
        from_name: 'Shop',
        from_email: `news@${domain}`,
        segment_ids: [segmentA],
        ...overrides,
      },
    });
  const created = async (overrides: Record<string, unknown> = {}) => {
    const response = await create(overrides);
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return response.body.data as BroadcastBody;
  };
  const patch = (id: string, body: unknown) => h.request('PATCH', `/api/v1/outbox/broadcasts/${id}`, { headers: idem(), body });
  const remove = (id: string) => h.request('DELETE', `/api/v1/outbox/broadcasts/${id}`, { headers: idem() });
  const streams = () => createStreamsService({ orm: h.stack.orm });

  beforeAll(async () => {
    h = await startApiHarness();
    const orgId = h.workspace.org.id;
    domain = (await addSendingDomain(h.stack.orm, orgId)).domain;
    const segments = createSegmentsService({ orm: h.stack.orm });
    segmentA = (await segments.createSegment(orgId, { name: unique('a'), description: '', tags: [] })).segment.id;
    segmentB = (await segments.createSegment(orgId, { name: unique('b'), description: '', tags: [] })).segment.id;
    await streams().createStream(orgId, { name: 'product-news', kind: 'broadcast', daily_cap: 100 });
    await streams().createStream(orgId, { name: 'receipts', kind: 'transactional' });
  });
  afterAll(async () => h?.close());

  it('creates with the built-in broadcast stream by default, or a custom broadcast-kind stream', async () => {
    expect((await created()).stream).toBe('broadcast');
    const custom = await created({ stream: 'product-news' });
    expect(custom.stream).toBe('product-news');
    const read = await h.request('GET', `/api/v1/outbox/broadcasts/${custom._id}`);
    expect((read.body.data as BroadcastBody).stream).toBe('product-news');
    const row = await scopeToOrg(h.stack.orm.em.fork(), h.workspace.org.id).findOneOrFail(Broadcast, { id: custom._id });
    expect(row.stream).toBe('product-news');
  });

  it.each([
    ['unknown-stream', 'UNKNOWN_STREAM', 'unknown_stream'],
    ['receipts', 'STREAM_NOT_BROADCAST', 'stream_kind'],
    ['transactional', 'STREAM_NOT_BROADCAST', 'stream_kind'],
  ])('refuses stream %s with 422 %s and stores nothing', async (stream, reason, type) => {
    const name = unique('refused');
    const response = await create({ name, stream });
    expectError(response, 422, 'unprocessable_entity');
    expect(reasonOf(response)).toBe(reason);
    expect(fieldsOf(response)).toEqual([expect.objectContaining({ path: 'stream', location: 'body', type })]);
    expect(await scopeToOrg(h.stack.orm.em.fork(), h.workspace.org.id).count(Broadcast, { name })).toBe(0);
  });

  it('refuses a malformed stream name with 400 invalid_request at body.stream', async () => {
    const response = await create({ stream: 'Not A Name' });
    expectError(response, 400, 'invalid_request');
    expect(fieldsOf(response).map((f) => f.path)).toEqual(['stream']);
  });

  it('changes the fields given of a draft, clears reply_to and scheduled_at with null, and keeps the rest', async () => {
    const at = new Date(Date.now() + 24 * 3600 * 1000).toISOString();
    const draft = await created({ reply_to: 'reply@example.com', scheduled_at: at });
    const response = await patch(draft._id, {
      subject: 'Changed',
      segment_ids: [segmentB, segmentA, segmentB],
      stream: 'product-news',
      reply_to: null,
      scheduled_at: null,
    });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const changed = response.body.data as BroadcastBody;
    expect(changed).toMatchObject({
      _id: draft._id,
      name: draft.name,
      subject: 'Changed',
      groupIds: [segmentB, segmentA],
      scheduledAt: null,
    });
    expect(changed.stream).toBe('product-news');
    const row = await scopeToOrg(h.stack.orm.em.fork(), h.workspace.org.id).findOneOrFail(Broadcast, { id: draft._id });
    expect(row.replyTo).toBeNull();
    expect(row.status).toBe('draft');
  });

  it('refuses bad changes with every problem listed, or 422 for the stream, changing nothing', async () => {
    const draft = await created();
    const bad = await patch(draft._id, {
      from_email: 'news@elsewhere.example',
      segment_ids: ['0123456789abcdef01234567'],
      scheduled_at: '2020-01-01T00:00:00Z',
    });
    expectError(bad, 400, 'invalid_request');
    expect(fieldsOf(bad).map((f) => f.path)).toEqual(['from_email', 'segment_ids.0', 'scheduled_at']);
    expectError(await patch(draft._id, { stream: 'receipts' }), 422, 'unprocessable_entity');
    expectError(await patch(draft._id, { subject: '' }), 400, 'invalid_request');
    expectError(await patch(draft._id, { unknown_field: 1 }), 400, 'invalid_request');
    const row = await scopeToOrg(h.stack.orm.em.fork(), h.workspace.org.id).findOneOrFail(Broadcast, { id: draft._id });
    expect([row.fromEmail, row.segmentIds, row.scheduledAt, row.stream, row.subject]).toEqual([
      `news@${domain}`,
      [segmentA],
      null,
      'broadcast',
      'Hello',
    ]);
  });

  it('answers 409 BROADCAST_NOT_DRAFT to a change or delete of a launched broadcast, which stays as it was', async () => {
    const draft = await created();
    const em = scopeToOrg(h.stack.orm.em.fork(), h.workspace.org.id);
    await em.nativeUpdate(Broadcast, { id: draft._id }, { status: 'sent', launchedAt: new Date() });
    for (const response of [await patch(draft._id, { subject: 'Too late' }), await remove(draft._id)]) {
      expectError(response, 409, 'conflict');
      expect(reasonOf(response)).toBe('BROADCAST_NOT_DRAFT');
    }
    const row = await em.fork().findOneOrFail(Broadcast, { id: draft._id });
    expect([row.subject, row.status]).toEqual(['Hello', 'sent']);
  });

  it('deletes a draft (then 404)', async () => {
    const draft = await created();
    const response = await remove(draft._id);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body.data).toEqual({ _id: draft._id, deleted: true });
    expectError(await h.request('GET', `/api/v1/outbox/broadcasts/${draft._id}`), 404, 'not_found');
    expectError(await remove(draft._id), 404, 'not_found');
    expect(await scopeToOrg(h.stack.orm.em.fork(), h.workspace.org.id).count(Broadcast, { id: draft._id })).toBe(0);
  });

  it("refuses a launch whose custom stream was deleted since the draft (422 UNKNOWN_STREAM), and hides other workspaces' drafts", async () => {
    await streams().createStream(h.workspace.org.id, { name: 'short-lived', kind: 'broadcast' });
    const draft = await created({ stream: 'short-lived', html: '<p>Hi</p>' });
    await streams().deleteStream(h.workspace.org.id, 'short-lived');
    const launch = await h.request('POST', `/api/v1/outbox/broadcasts/${draft._id}/send`, { headers: idem(), body: {} });
    expectError(launch, 422, 'unprocessable_entity');
    expect(reasonOf(launch)).toBe('UNKNOWN_STREAM');
    const other = await createOrgWithKey(h.stack.orm);
    const request = apiClient(h.api.url, other.key);
    expectError(
      await request('PATCH', `/api/v1/outbox/broadcasts/${draft._id}`, { headers: idem(), body: { subject: 'x' } }),
      404,
      'not_found',
    );
    expectError(await request('DELETE', `/api/v1/outbox/broadcasts/${draft._id}`, { headers: idem() }), 404, 'not_found');
  });
});
