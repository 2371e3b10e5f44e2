import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TransactionalEmail } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { expectError } from '../support/http.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';

type Result = {
  index: number;
  status: number;
  email?: { _id: string; subject: string };
  error?: { code: string; details?: { reason?: string; fields?: { path: string }[] } };
};
type Batch = { accepted: number; refused: number; results: Result[] };

/** POST /outbox/emails/batch: up to 100 messages, each accepted or refused on its own, idempotent per message. */
describe('POST /api/v1/outbox/emails/batch', () => {
  let h: ApiHarness;
  let domain: string;
  let orgId: string;
  const batch = (emails: unknown[], headers: Record<string, string> = idem()) =>
    h.request('POST', '/api/v1/outbox/emails/batch', { body: { emails }, headers });
  const message = (subject: string, extra: Record<string, unknown> = {}) => ({
    from: `shop@${domain}`,
    to: 'buyer@example.com',
    subject,
    text: 'Hello',
    ...extra,
  });
  const emailCount = () => scopeToOrg(h.stack.orm.em, orgId).count(TransactionalEmail, {});

  beforeAll(async () => {
    h = await startApiHarness({ SEND_HANDOFF_WAIT_MS: '0' });
    orgId = h.workspace.org.id;
    domain = (await addSendingDomain(h.stack.orm, orgId)).domain;
    await setCredits(h.stack.orm, orgId, 10_000);
  });
  afterAll(async () => h?.close());

  it('accepts the good messages and refuses the bad ones, each with the answer it would have had alone, in order', async () => {
    const before = await emailCount();
    const response = await batch([
      message('one'),
      message('bad from', { from: 'not an address' }),
      message('suppressed', { to: 'suppressed@simulator.herald.test' }),
      message('no body', { text: undefined }),
      message('two', { cc: ['cc@example.com'] }),
    ]);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const data = response.body.data as Batch;
    expect(data).toMatchObject({ accepted: 2, refused: 3 });
    expect(data.results.map((r) => [r.index, r.status, r.error?.details?.reason ?? null])).toEqual([
      [0, 202, null],
      [1, 400, 'INVALID_FROM'],
      [2, 403, 'RECIPIENT_SUPPRESSED'],
      [3, 400, 'EMPTY_BODY'],
      [4, 202, null],
    ]);
    expect(data.results[1]!.error!.details!.fields!.map((f) => f.path)).toContain('emails.1.from');
    expect(data.results[4]!.email!.subject).toBe('two');
    expect(await emailCount()).toBe(before + 2);
  });

  it('replays the whole answer for the same key and body, and sends nothing again', async () => {
    const key = idem();
    const first = await batch([message('idem a'), message('idem b')], key);
    const before = await emailCount();
    const again = await batch([message('idem a'), message('idem b')], key);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data).toEqual(first.body.data);
    expect(await emailCount()).toBe(before);
  });

  it('keeps each message idempotent: a batch re-run after losing its own record sends only what was not accepted', async () => {
    const key = idem();
    const first = (await batch([message('crash a'), message('crash b', { from: 'bad' })], key)).body.data as Batch;
    // As after a crash mid-batch whose lock has lapsed: the batch's own record is gone.
    await h.stack.orm.em
      .getConnection()
      .execute(`delete from idempotency_records where org_id = ? and key = ?`, [orgId, key['idempotency-key']]);
    const before = await emailCount();
    const rerun = (await batch([message('crash a'), message('crash b', { from: 'bad' })], key)).body.data as Batch;
    expect(rerun.results[0]!.email!._id).toBe(first.results[0]!.email!._id);
    expect(rerun.results[1]!.status).toBe(400);
    expect(await emailCount()).toBe(before);
  });

  it('refuses the messages past the credits left with 402 and accepts those before', async () => {
    const other = await startApiHarness({ SEND_HANDOFF_WAIT_MS: '0' });
    try {
      const otherDomain = (await addSendingDomain(other.stack.orm, other.workspace.org.id)).domain;
      await setCredits(other.stack.orm, other.workspace.org.id, 2);
      const response = await other.request('POST', '/api/v1/outbox/emails/batch', {
        headers: idem(),
        body: { emails: [1, 2, 3].map((i) => ({ from: `shop@${otherDomain}`, to: `r${i}@example.com`, subject: `c${i}`, text: 'x' })) },
      });
      expect((response.body.data as Batch).results.map((r) => r.status)).toEqual([202, 202, 402]);
    } finally {
      await other.close();
    }
  });

  it('takes 1 to 100 messages, each a JSON object', async () => {
    const hundred = Array.from({ length: 100 }, (_, i) => message(`bulk ${i}`, { to: `bulk${i}@example.com` }));
    const full = await batch(hundred);
    expect(full.status).toBe(200);
    expect((full.body.data as Batch).accepted).toBe(100);
    expectError(await batch([...hundred, message('one too many')]), 400, 'invalid_request');
    expectError(await batch([]), 400, 'invalid_request');
    expectError(await batch([message('ok'), 'not an object']), 400, 'invalid_request');
    expectError(
      await h.request('POST', '/api/v1/outbox/emails/batch', { headers: idem(), body: { emails: [message('x')], extra: true } }),
      400,
      'invalid_request',
    );
  });
});
