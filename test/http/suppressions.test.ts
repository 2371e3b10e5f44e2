import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { suppressAddress } from '../../src/modules/sends/suppression.repo.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient, expectError } from '../support/http.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';

type Entry = { email: string; reason: string; email_id: string | null; detail: string | null };
type Change = { email: string; action: string; reason: string; api_key_id: string | null };

/** The suppression list: list, add, lift (with the contact), the audit trail, and sends honouring each. */
describe('the suppression list', () => {
  let h: ApiHarness;
  let domain: string;
  const send = (to: string) =>
    h.request('POST', '/api/v1/outbox/emails', { headers: idem(), body: { from: `shop@${domain}`, to, subject: 'Hi', text: 'x' } });
  const reasonOf = (response: { body: { error?: { details?: unknown } } }) =>
    (response.body.error?.details as { reason?: string } | undefined)?.reason;

  beforeAll(async () => {
    h = await startApiHarness({ SEND_HANDOFF_WAIT_MS: '0' });
    domain = (await addSendingDomain(h.stack.orm, h.workspace.org.id)).domain;
    await setCredits(h.stack.orm, h.workspace.org.id, 1_000);
  });
  afterAll(async () => h?.close());

  it('adds an address by hand, refuses sends to it, and lifts it so sends pass again, each change in the trail', async () => {
    const added = await h.request('POST', '/api/v1/suppressions', {
      headers: idem(),
      body: { email: ' Manual@Example.com ', detail: 'asked by phone' },
    });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    expect(added.body.data).toMatchObject({ email: 'manual@example.com', reason: 'manual', detail: 'asked by phone' });
    expect(reasonOf(await send('manual@example.com'))).toBe('RECIPIENT_SUPPRESSED');

    const again = await h.request('POST', '/api/v1/suppressions', { headers: idem(), body: { email: 'manual@example.com' } });
    expectError(again, 409, 'conflict');
    expect(reasonOf(again)).toBe('ALREADY_SUPPRESSED');

    const lifted = await h.request('DELETE', '/api/v1/suppressions/manual%40example.com', { headers: idem() });
    expect(lifted.status, JSON.stringify(lifted.body)).toBe(200);
    expect(lifted.body.data).toEqual({ email: 'manual@example.com', deleted: true, contact_reactivated: false });
    expect((await send('manual@example.com')).status).toBe(202);
    expectError(await h.request('DELETE', '/api/v1/suppressions/manual%40example.com', { headers: idem() }), 404, 'not_found');

    const changes = (await h.request('GET', '/api/v1/suppressions/changes')).body.data as Change[];
    expect(changes.filter((c) => c.email === 'manual@example.com').map((c) => [c.action, c.reason, c.api_key_id])).toEqual([
      ['removed', 'manual', h.workspace.apiKey.id],
      ['added', 'manual', h.workspace.apiKey.id],
    ]);
  });

  it('lists bounces as `bounce` with their email, filters by reason and address, and lifting one reactivates the bounced contact', async () => {
    const orgId = h.workspace.org.id;
    const em = scopeToOrg(h.stack.orm.em, orgId);
    em.create(Contact, { orgId, email: 'gone@example.com', status: 'bounced' });
    await em.flush();
    await suppressAddress(h.stack.orm.em.fork(), orgId, 'gone@example.com', 'hard_bounce', {
      emailId: 'a'.repeat(24),
      detail: '550 5.1.1 no such user',
    });
    await suppressAddress(h.stack.orm.em.fork(), orgId, 'spam@example.com', 'complaint');
    const bounces = (await h.request('GET', '/api/v1/suppressions?reason=bounce')).body.data as Entry[];
    expect(bounces).toEqual([
      expect.objectContaining({ email: 'gone@example.com', reason: 'bounce', email_id: 'a'.repeat(24), detail: '550 5.1.1 no such user' }),
    ]);
    expect(((await h.request('GET', '/api/v1/suppressions?email=SPAM@example.com')).body.data as Entry[]).map((e) => e.reason)).toEqual([
      'complaint',
    ]);
    expect(reasonOf(await send('gone@example.com'))).toBe('RECIPIENT_SUPPRESSED');

    const lifted = await h.request('DELETE', '/api/v1/suppressions/gone@example.com', { headers: idem() });
    expect(lifted.body.data).toMatchObject({ contact_reactivated: true });
    expect((await em.fork().findOneOrFail(Contact, { email: 'gone@example.com' })).status).toBe('active');
    expect((await send('gone@example.com')).status).toBe(202);
    const trail = (await h.request('GET', '/api/v1/suppressions/changes')).body.data as Change[];
    expect(trail.find((c) => c.email === 'gone@example.com' && c.action === 'added')).toMatchObject({ reason: 'bounce', api_key_id: null });
  });

  it('keeps workspaces apart and checks input and scopes', async () => {
    await h.request('POST', '/api/v1/suppressions', { headers: idem(), body: { email: 'mine@example.com' } });
    const other = await createOrgWithKey(h.stack.orm, { scopes: ['all'] });
    const theirs = apiClient(h.api.url, other.key);
    expect(((await theirs('GET', '/api/v1/suppressions')).body.data as Entry[]).map((e) => e.email)).not.toContain('mine@example.com');
    expectError(await theirs('DELETE', '/api/v1/suppressions/mine@example.com', { headers: idem() }), 404, 'not_found');
    expectError(
      await h.request('POST', '/api/v1/suppressions', { headers: idem(), body: { email: 'not an address' } }),
      400,
      'invalid_request',
    );
    expectError(
      await h.request('POST', '/api/v1/suppressions', { headers: idem(), body: { email: 'x@example.com', detail: 'd'.repeat(1025) } }),
      400,
      'invalid_request',
    );
    expect(
      (await h.request('POST', '/api/v1/suppressions', { headers: idem(), body: { email: 'y@example.com', detail: 'd'.repeat(1024) } }))
        .status,
    ).toBe(201);
    expectError(await h.request('GET', '/api/v1/suppressions?reason=hard_bounce'), 400, 'invalid_request');
    const readOnly = await createOrgWithKey(h.stack.orm, { scopes: ['contacts:read'] });
    expectError(
      await apiClient(h.api.url, readOnly.key)('POST', '/api/v1/suppressions', { headers: idem(), body: { email: 'z@example.com' } }),
      403,
      'missing_scope',
    );
  });
});
