import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact, IdempotencyRecord } from '../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { expectError } from '../support/http.ts';

describe('Idempotency-Key on writes', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(() => h.close());

  const countContacts = (email: string) => scopeToOrg(h.stack.orm.em, h.workspace.org.id).count(Contact, { email });

  it.each([
    ['missing', undefined],
    ['7 characters', 'x'.repeat(7)],
    ['129 characters', 'x'.repeat(129)],
  ])('answers 400 invalid_request when the key is %s, and writes nothing', async (_label, key) => {
    const response = await h.request('POST', '/api/v1/contacts', {
      headers: key === undefined ? {} : { 'idempotency-key': key },
      body: { email: `nokey-${key?.length ?? 0}@example.com` },
    });
    expectError(response, 400, 'invalid_request');
    expect(response.body.error?.details).toMatchObject({ fields: [{ path: 'Idempotency-Key', location: 'header' }] });
    expect(await countContacts(`nokey-${key?.length ?? 0}@example.com`)).toBe(0);
  });

  it.each([8, 128])('accepts a key of %i characters', async (length) => {
    const response = await h.request('POST', '/api/v1/contacts', {
      headers: { 'idempotency-key': `k${length}`.padEnd(length, '-') },
      body: { email: `len${length}@example.com` },
    });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
  });

  it('replays the stored status and body for the same key and request, marked Idempotent-Replayed', async () => {
    const headers = idem();
    const first = await h.request('POST', '/api/v1/contacts', { headers, body: { email: 'replay@example.com', tags: ['a'] } });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // Same content with keys in another order: the canonical body matches.
    const again = await h.request('POST', '/api/v1/contacts', { headers, body: { tags: ['a'], email: 'replay@example.com' } });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await countContacts('replay@example.com')).toBe(1);
  });

  it('answers 409 idempotency_conflict when the key is reused with different content', async () => {
    const headers = idem();
    await h.request('POST', '/api/v1/contacts', { headers, body: { email: 'first@example.com' } });
    const response = await h.request('POST', '/api/v1/contacts', { headers, body: { email: 'second@example.com' } });
    expectError(response, 409, 'idempotency_conflict');
    expect(await countContacts('second@example.com')).toBe(0);
  });

  it('replays stored 4xx answers too (the same request gets the same answer)', async () => {
    const headers = idem();
    const first = await h.request('POST', '/api/v1/contacts', { headers, body: { email: 'bad' } });
    expectError(first, 400, 'invalid_request');
    const again = await h.request('POST', '/api/v1/contacts', { headers, body: { email: 'bad' } });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
  });

  it('scopes keys to the API key: another key may use the same Idempotency-Key', async () => {
    const { createApiKeysService } = await import('../../src/modules/auth/api-keys.service.ts');
    const second = await createApiKeysService({ orm: h.stack.orm }).createApiKey({ orgId: h.workspace.org.id, scopes: ['all'] });
    const headers = idem();
    expect((await h.request('POST', '/api/v1/contacts', { headers, body: { email: 'k1@example.com' } })).status).toBe(201);
    const other = await h.request('POST', '/api/v1/contacts', { headers, body: { email: 'k2@example.com' }, key: second.key });
    expect(other.status).toBe(201);
    expect(other.headers.get('idempotent-replayed')).toBeNull();
  });

  it('keeps records for 24 hours', async () => {
    const headers = idem();
    await h.request('POST', '/api/v1/contacts', { headers, body: { email: 'ttl@example.com' } });
    const record = await h.stack.orm.em.fork().findOneOrFail(IdempotencyRecord, { key: headers['idempotency-key']! }, ALL_TENANTS);
    const hours = (record.expiresAt.getTime() - record.createdAt.getTime()) / 3_600_000;
    expect(hours).toBeGreaterThan(23.9);
    expect(hours).toBeLessThan(24.1);
  });

  it('20 parallel requests with the same key and body create exactly one resource', async () => {
    const headers = idem();
    const body = { email: 'race@example.com' };
    const responses = await Promise.all(Array.from({ length: 20 }, () => h.request('POST', '/api/v1/contacts', { headers, body })));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThanOrEqual(1);
    for (const response of responses) {
      if (response.status === 201) continue;
      expectError(response, 409, 'conflict');
      expect(response.headers.get('retry-after')).toBe('1');
    }
    const originals = responses.filter((r) => r.status === 201 && r.headers.get('idempotent-replayed') === null);
    expect(originals).toHaveLength(1);
    expect(await countContacts('race@example.com')).toBe(1);
  });

  it('does not store 5xx answers, so a retry with the same key can succeed', async () => {
    const connection = h.stack.orm.em.getConnection();
    const headers = idem();
    const body = { email: 'retry-after-500@example.com' };
    await connection.execute('alter table contacts rename to contacts_offline');
    let failed;
    try {
      failed = await h.request('POST', '/api/v1/contacts', { headers, body });
    } finally {
      await connection.execute('alter table contacts_offline rename to contacts');
    }
    expectError(failed, 500, 'internal_error');
    expect(JSON.stringify(failed.body)).not.toMatch(/contacts_offline|relation/);
    const retried = await h.request('POST', '/api/v1/contacts', { headers, body });
    expect(retried.status, JSON.stringify(retried.body)).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(await countContacts('retry-after-500@example.com')).toBe(1);
  });
});
