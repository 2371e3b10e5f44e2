import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Event } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { startDnsServer } from '../support/dns-server.ts';
import { expectError } from '../support/http.ts';

interface ContactData {
  _id: string;
  email: string;
  status: string;
  firstName: string;
  tags: string[];
  updatedAt: string;
}

describe('contacts: update, delete, quality validation, events, filters', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(() => h.close());

  async function create(email: string, extra: Record<string, unknown> = {}): Promise<ContactData> {
    const response = await h.request('POST', '/api/v1/contacts', { headers: idem(), body: { email, ...extra } });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return response.body.data as ContactData;
  }
  const patch = (id: string, body: unknown) => h.request('PATCH', `/api/v1/contacts/${id}`, { headers: idem(), body });
  const eventsFor = async (id: string) =>
    (await scopeToOrg(h.stack.orm.em, h.workspace.org.id).find(Event, {}, { orderBy: { id: 'asc' } }))
      .filter((e) => (e.data.contact as { _id?: string } | undefined)?._id === id)
      .map((e) => e.type);

  describe('PATCH /api/v1/contacts/{id}', () => {
    it('updates the given fields only and moves updatedAt', async () => {
      const contact = await create('patch@example.com', { first_name: 'Ada', tags: ['a'] });
      await new Promise((resolve) => setTimeout(resolve, 5));
      const response = await patch(contact._id, { last_name: 'Lovelace', tags: ['b', 'b'] });
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect(response.body.data).toMatchObject({ firstName: 'Ada', lastName: 'Lovelace', tags: ['b'], email: 'patch@example.com' });
      expect((response.body.data as ContactData).updatedAt > contact.updatedAt).toBe(true);
      expect(await eventsFor(contact._id)).toEqual(['contact.created', 'contact.updated']);
    });

    it.each(['active', 'unsubscribed', 'bounced', 'complained', 'suppressed'])('accepts status %s', async (status) => {
      const contact = await create(`status-${status}@example.com`, {});
      const response = await patch(contact._id, { status });
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect((response.body.data as ContactData).status).toBe(status);
    });

    it.each(['deleted', 'ACTIVE', '', 'spam'])('answers 400 for status %j', async (status) => {
      const contact = await create(`badstatus-${status || 'empty'}@example.com`);
      const response = await patch(contact._id, { status });
      expectError(response, 400, 'invalid_request');
      expect(response.body.error?.details).toMatchObject({ fields: [{ path: 'status', location: 'body' }] });
    });

    it.each([
      ['unsubscribed', 'contact.unsubscribed'],
      ['suppressed', 'contact.suppressed'],
      ['bounced', 'contact.bounced'],
      ['complained', 'contact.complained'],
    ])('writes contact.updated and %s → %s when the status moves there', async (status, event) => {
      const contact = await create(`move-${status}@example.com`);
      await patch(contact._id, { status });
      expect(await eventsFor(contact._id)).toEqual(['contact.created', 'contact.updated', event]);
    });

    it('writes no event for a PATCH that changes nothing', async () => {
      const contact = await create('noop@example.com', { first_name: 'Same' });
      const response = await patch(contact._id, { first_name: 'Same', status: 'active' });
      expect(response.status).toBe(200);
      expect(await eventsFor(contact._id)).toEqual(['contact.created']);
    });

    it('answers 409 conflict when moving to a taken email, also after normalisation', async () => {
      await create('taken@example.com');
      const contact = await create('mover@example.com');
      expectError(await patch(contact._id, { email: 'taken@EXAMPLE.COM' }), 409, 'conflict');
      expectError(await patch(contact._id, { email: 'taken@Example.Com' }), 409, 'conflict');
      const moved = await patch(contact._id, { email: ' Moved@Example.COM ' });
      expect((moved.body.data as ContactData).email).toBe('Moved@example.com');
    });

    it('answers 400 for unknown fields and bad values, 404 for an unknown id', async () => {
      const contact = await create('patchbad@example.com');
      expectError(await patch(contact._id, { firstName: 'x' }), 400, 'invalid_request');
      expectError(await patch(contact._id, { tags: 'x' }), 400, 'invalid_request');
      expectError(await patch(contact._id, { email: 'nope' }), 400, 'invalid_request');
      expectError(await patch('f'.repeat(24), { first_name: 'x' }), 404, 'not_found');
    });
  });

  describe('DELETE /api/v1/contacts/{id}', () => {
    it('deletes, writes contact.deleted, and the contact is gone', async () => {
      const contact = await create('delete@example.com');
      const response = await h.request('DELETE', `/api/v1/contacts/${contact._id}`, { headers: idem() });
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect(response.body.data).toEqual({ _id: contact._id, deleted: true });
      expectError(await h.request('GET', `/api/v1/contacts/${contact._id}`), 404, 'not_found');
      expectError(await h.request('DELETE', `/api/v1/contacts/${contact._id}`, { headers: idem() }), 404, 'not_found');
      expect(await eventsFor(contact._id)).toEqual(['contact.created', 'contact.deleted']);
      // The email is free again.
      await create('delete@example.com');
    });
  });

  describe('quality validation (422)', () => {
    it.each([
      ['someone@mailinator.com', 'DISPOSABLE_DOMAIN'],
      ['someone@eu.mailinator.com', 'DISPOSABLE_DOMAIN'],
      ['someone@nomail.example.org', 'NO_MAIL_SERVER'],
    ])('refuses %s with details.reason %s on create and on PATCH', async (email, reason) => {
      const response = await h.request('POST', '/api/v1/contacts', { headers: idem(), body: { email } });
      expectError(response, 422, 'unprocessable_entity');
      expect(response.body.error?.details).toEqual({ reason, field: 'email' });
      const contact = await create(`q-${reason.toLowerCase()}-${email.length}@example.com`);
      const patched = await patch(contact._id, { email });
      expectError(patched, 422, 'unprocessable_entity');
    });

    it('accepts a domain with only an A record (implicit MX) and one with MX', async () => {
      const dns = await startDnsServer({
        'a-only.test': { A: ['192.0.2.1'] },
        'mx.test': { MX: [{ exchange: 'mx.mx.test', priority: 5 }] },
        'null.test': { MX: [{ exchange: '', priority: 0 }] },
      });
      const own = await startApiHarness({ DNS_SERVERS: dns.address });
      try {
        for (const email of ['x@a-only.test', 'x@mx.test']) {
          const response = await own.request('POST', '/api/v1/contacts', { headers: idem(), body: { email } });
          expect(response.status, JSON.stringify(response.body)).toBe(201);
        }
        const nullMx = await own.request('POST', '/api/v1/contacts', { headers: idem(), body: { email: 'x@null.test' } });
        expectError(nullMx, 422, 'unprocessable_entity');
        expect(nullMx.body.error?.details).toMatchObject({ reason: 'NO_MAIL_SERVER' });

        dns.setSilent(true);
        const unknown = await own.request('POST', '/api/v1/contacts', { headers: idem(), body: { email: 'x@never-resolved.test' } });
        expect(unknown.status, 'DNS unreachable: accepted').toBe(201);
      } finally {
        await own.close();
        await dns.close();
      }
    });
  });

  describe('GET /api/v1/contacts filters', () => {
    it('filters by exact (normalised) email and by status', async () => {
      const a = await create('filter-a@example.com');
      await create('filter-b@example.com');
      await patch(a._id, { status: 'unsubscribed' });
      const byEmail = await h.request('GET', '/api/v1/contacts?email=filter-a@EXAMPLE.com');
      expect((byEmail.body.data as ContactData[]).map((c) => c._id)).toEqual([a._id]);
      const byStatus = await h.request('GET', '/api/v1/contacts?status=unsubscribed');
      expect((byStatus.body.data as ContactData[]).map((c) => c._id)).toContain(a._id);
      expect((byStatus.body.data as ContactData[]).every((c) => c.status === 'unsubscribed')).toBe(true);
      expectError(await h.request('GET', '/api/v1/contacts?status=gone'), 400, 'invalid_request');
    });
  });
});

describe('CONTACT_DNS_CHECK=false', () => {
  it('skips the mail-server check but still refuses disposable domains', async () => {
    const own = await startApiHarness({ CONTACT_DNS_CHECK: 'false' });
    try {
      const created = await own.request('POST', '/api/v1/contacts', { headers: idem(), body: { email: 'x@nomail.example.org' } });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const disposable = await own.request('POST', '/api/v1/contacts', { headers: idem(), body: { email: 'x@mailinator.com' } });
      expectError(disposable, 422, 'unprocessable_entity');
    } finally {
      await own.close();
    }
  });
});
