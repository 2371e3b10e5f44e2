import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { expectError } from '../support/http.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';
import { suppressAddress } from '../../src/modules/sends/suppression.repo.ts';
import { recordEmailEvents } from '../../src/modules/metrics/email-events.ts';

type Stream = { name: string; kind: string; built_in: boolean; daily_cap: number | null; sent_today: number };
type Entry = { email: string; reason: string; stream: string | null };

const reasonOf = (response: { body: { error?: { details?: unknown } } }) =>
  (response.body.error?.details as { reason?: string } | undefined)?.reason;

/** Message streams: the /streams resource, the send's `stream`, stream-scoped suppressions and the daily budget. */
describe('message streams', () => {
  let h: ApiHarness;
  let domain: string;
  const send = (to: string, extra: Record<string, unknown> = {}) =>
    h.request('POST', '/api/v1/outbox/emails', {
      headers: idem(),
      body: { from: `shop@${domain}`, to, subject: 'Hi', text: 'x', ...extra },
    });

  beforeAll(async () => {
    h = await startApiHarness({ SEND_HANDOFF_WAIT_MS: '0' });
    domain = (await addSendingDomain(h.stack.orm, h.workspace.org.id)).domain;
    await setCredits(h.stack.orm, h.workspace.org.id, 1_000);
  });
  afterAll(async () => h?.close());

  describe('GET, POST, PATCH and DELETE /api/v1/streams', () => {
    it('lists the built-in streams, creates a custom one, changes its budget and deletes it', async () => {
      const listed = await h.request('GET', '/api/v1/streams');
      expect(listed.status, JSON.stringify(listed.body)).toBe(200);
      expect((listed.body.data as Stream[]).map((s) => [s.name, s.kind, s.built_in])).toEqual([
        ['transactional', 'transactional', true],
        ['broadcast', 'broadcast', true],
      ]);

      const created = await h.request('POST', '/api/v1/streams', { headers: idem(), body: { name: 'receipts', kind: 'transactional' } });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body.data).toMatchObject({ name: 'receipts', kind: 'transactional', built_in: false, daily_cap: null, sent_today: 0 });

      const patched = await h.request('PATCH', '/api/v1/streams/receipts', { headers: idem(), body: { daily_cap: 500 } });
      expect(patched.status, JSON.stringify(patched.body)).toBe(200);
      expect(patched.body.data).toMatchObject({ name: 'receipts', daily_cap: 500 });

      expect((await h.request('DELETE', '/api/v1/streams/receipts', { headers: idem() })).status).toBe(200);
      expectError(await h.request('GET', '/api/v1/streams/receipts'), 404, 'not_found');
    });

    it('refuses a taken name, a built-in deletion and bad bodies with the right codes', async () => {
      const taken = await h.request('POST', '/api/v1/streams', { headers: idem(), body: { name: 'broadcast', kind: 'broadcast' } });
      expectError(taken, 409, 'conflict');
      expect(reasonOf(taken)).toBe('STREAM_EXISTS');
      const builtIn = await h.request('DELETE', '/api/v1/streams/transactional', { headers: idem() });
      expectError(builtIn, 409, 'conflict');
      expect(reasonOf(builtIn)).toBe('STREAM_BUILT_IN');

      const bad: [Record<string, unknown>, string][] = [
        [{ name: 'Upper Case', kind: 'broadcast' }, 'name'],
        [{ name: 'news', kind: 'marketing' }, 'kind'],
        [{ name: 'news', kind: 'broadcast', daily_cap: 0 }, 'daily_cap'],
        [{ name: 'news', kind: 'broadcast', extra: true }, 'extra'],
      ];
      for (const [body, path] of bad) {
        const response = await h.request('POST', '/api/v1/streams', { headers: idem(), body });
        expectError(response, 400, 'invalid_request');
        expect(JSON.stringify(response.body.error?.details), JSON.stringify(body)).toContain(`"path":"${path}"`);
      }
    });
  });

  describe('POST /api/v1/outbox/emails with a stream', () => {
    it('puts an email in the transactional stream by default and in the stream it names, shown on the record', async () => {
      await h.request('POST', '/api/v1/streams', { headers: idem(), body: { name: 'alerts', kind: 'transactional' } });
      const plain = await send('plain@example.com');
      expect(plain.status, JSON.stringify(plain.body)).toBe(202);
      expect(plain.body.data).toMatchObject({ stream: 'transactional' });
      const named = await send('alerted@example.com', { stream: 'alerts' });
      expect(named.status, JSON.stringify(named.body)).toBe(202);
      expect(named.body.data).toMatchObject({ stream: 'alerts' });
      const fetched = await h.request('GET', `/api/v1/outbox/emails/${(named.body.data as { _id: string })._id}`);
      expect(fetched.body.data).toMatchObject({ stream: 'alerts' });
      const logged = await h.request('GET', '/api/v1/outbox/emails?stream=alerts');
      expect((logged.body.data as { stream: string }[]).map((e) => e.stream)).toEqual(['alerts']);
    });

    it('answers 422 UNKNOWN_STREAM for a stream the workspace does not have, 400 for a malformed one', async () => {
      const unknown = await send('someone@example.com', { stream: 'nope' });
      expectError(unknown, 422, 'unprocessable_entity');
      expect(reasonOf(unknown)).toBe('UNKNOWN_STREAM');
      expectError(await send('someone@example.com', { stream: 'Not A Name' }), 400, 'invalid_request');
    });

    it("refuses past the stream's daily budget with 429 STREAM_BUDGET_REACHED and Retry-After", async () => {
      await h.request('POST', '/api/v1/streams', { headers: idem(), body: { name: 'capped', kind: 'transactional', daily_cap: 2 } });
      expect((await send('a@example.com', { stream: 'capped', cc: ['b@example.com'] })).status).toBe(202);
      const over = await send('c@example.com', { stream: 'capped' });
      expectError(over, 429, 'rate_limited');
      expect(reasonOf(over)).toBe('STREAM_BUDGET_REACHED');
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      // Other streams are not held back by it.
      expect((await send('c@example.com')).status).toBe(202);
      const listed = (await h.request('GET', '/api/v1/streams')).body.data as Stream[];
      expect(listed.find((s) => s.name === 'capped')).toMatchObject({ daily_cap: 2, sent_today: 2 });
    });
  });

  describe('stream-scoped suppressions', () => {
    it('a broadcast unsubscribe blocks broadcast-stream sends only; a hard bounce blocks every stream', async () => {
      const orgId = h.workspace.org.id;
      await suppressAddress(h.stack.orm.em.fork(), orgId, 'optout@example.com', 'unsubscribe', { stream: 'broadcast' });
      expect((await send('optout@example.com')).status).toBe(202);
      expect(reasonOf(await send('optout@example.com', { stream: 'broadcast' }))).toBe('RECIPIENT_SUPPRESSED');

      await suppressAddress(h.stack.orm.em.fork(), orgId, 'optout@example.com', 'hard_bounce');
      expect(reasonOf(await send('optout@example.com'))).toBe('RECIPIENT_SUPPRESSED');

      const entries = (await h.request('GET', '/api/v1/suppressions?email=optout@example.com')).body.data as Entry[];
      expect(entries.map((e) => [e.reason, e.stream]).sort()).toEqual([
        ['bounce', null],
        ['unsubscribe', 'broadcast'],
      ]);
      const onlyAll = (await h.request('GET', '/api/v1/suppressions?email=optout@example.com&stream=all')).body.data as Entry[];
      expect(onlyAll.map((e) => e.reason)).toEqual(['bounce']);
    });

    it('adds a manual suppression for one stream, refuses an unknown stream, and lifts one scope at a time', async () => {
      const scoped = await h.request('POST', '/api/v1/suppressions', {
        headers: idem(),
        body: { email: 'scoped@example.com', stream: 'broadcast' },
      });
      expect(scoped.status, JSON.stringify(scoped.body)).toBe(201);
      expect(scoped.body.data).toMatchObject({ email: 'scoped@example.com', reason: 'manual', stream: 'broadcast' });
      expect((await send('scoped@example.com')).status).toBe(202);

      const everywhere = await h.request('POST', '/api/v1/suppressions', { headers: idem(), body: { email: 'scoped@example.com' } });
      expect(everywhere.status, JSON.stringify(everywhere.body)).toBe(201);
      expect(everywhere.body.data).toMatchObject({ stream: null });
      expect(reasonOf(await send('scoped@example.com'))).toBe('RECIPIENT_SUPPRESSED');

      const unknown = await h.request('POST', '/api/v1/suppressions', {
        headers: idem(),
        body: { email: 'x@example.com', stream: 'nope' },
      });
      expectError(unknown, 422, 'unprocessable_entity');
      expect(reasonOf(unknown)).toBe('UNKNOWN_STREAM');

      const liftAll = await h.request('DELETE', '/api/v1/suppressions/scoped%40example.com?stream=all', { headers: idem() });
      expect(liftAll.status, JSON.stringify(liftAll.body)).toBe(200);
      expect((await send('scoped@example.com')).status).toBe(202);
      expect(reasonOf(await send('scoped@example.com', { stream: 'broadcast' }))).toBe('RECIPIENT_SUPPRESSED');
      expect((await h.request('DELETE', '/api/v1/suppressions/scoped%40example.com', { headers: idem() })).status).toBe(200);
      expect((await send('scoped@example.com', { stream: 'broadcast' })).status).toBe(202);
    });
  });

  describe('webhook endpoints with a stream filter', () => {
    it('records the streams an endpoint subscribes to (null: every stream) and validates them', async () => {
      const body = { name: 'streams', url: 'https://receiver.example.com/hook', events: ['email.sent'] };
      const all = await h.request('POST', '/api/v1/webhooks', { headers: idem(), body });
      expect(all.status, JSON.stringify(all.body)).toBe(201);
      expect(all.body.data).toMatchObject({ streams: null });
      const chosen = await h.request('POST', '/api/v1/webhooks', { headers: idem(), body: { ...body, streams: ['transactional'] } });
      expect(chosen.body.data).toMatchObject({ streams: ['transactional'] });
      expectError(await h.request('POST', '/api/v1/webhooks', { headers: idem(), body: { ...body, streams: [] } }), 400, 'invalid_request');
    });
  });
});

describe('GET /api/v1/metrics?stream=', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startApiHarness({ SEND_HANDOFF_WAIT_MS: '0' });
  });
  afterAll(async () => h?.close());

  it("counts only the events of that stream's emails", async () => {
    const orgId = h.workspace.org.id;
    const { domain } = await addSendingDomain(h.stack.orm, orgId);
    await setCredits(h.stack.orm, orgId, 100);
    const sendIn = async (stream: string) => {
      const sent = await h.request('POST', '/api/v1/outbox/emails', {
        headers: idem(),
        body: { from: `shop@${domain}`, to: `${stream}@example.com`, subject: 'Hi', text: 'x', stream },
      });
      expect(sent.status, JSON.stringify(sent.body)).toBe(202);
      return (sent.body.data as { _id: string })._id;
    };
    const ids = { transactional: await sendIn('transactional'), broadcast: await sendIn('broadcast') };
    const em = h.stack.orm.em.fork();
    await em.transactional((tx) =>
      recordEmailEvents(tx, [
        { orgId, type: 'sent', recipient: 'transactional@example.com', domain, emailId: ids.transactional },
        { orgId, type: 'sent', recipient: 'broadcast@example.com', domain, emailId: ids.broadcast },
        { orgId, type: 'delivered', recipient: 'broadcast@example.com', domain, emailId: ids.broadcast },
      ]),
    );
    const sentOf = async (query: string) =>
      ((await h.request('GET', `/api/v1/metrics${query}`)).body.data as { summary: { sent: number; delivered: number } }).summary;
    expect(await sentOf('')).toMatchObject({ sent: 2, delivered: 1 });
    expect(await sentOf('?stream=broadcast')).toMatchObject({ sent: 1, delivered: 1 });
    expect(await sentOf('?stream=transactional')).toMatchObject({ sent: 1, delivered: 0 });
    expectError(await h.request('GET', '/api/v1/metrics?stream=Bad%20Name'), 400, 'invalid_request');
  });
});
