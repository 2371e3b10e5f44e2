import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact, ContactImport, ContactImportError } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { EXPORT_COLUMNS } from '../../src/modules/contacts/contacts-export.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient, expectError } from '../support/http.ts';

describe('GET /api/v1/contacts/export (CSV)', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(async () => h?.close());

  async function workspace(scopes = ['all']) {
    const ws = await createOrgWithKey(h.stack.orm, { scopes, rateLimitPerMinute: 100_000, burst: 10_000 });
    return { ...ws, request: apiClient(h.api.url, ws.key) };
  }

  /** The raw response: the CSV text and its headers. */
  async function download(key: string, query = '') {
    const response = await fetch(`${h.api.url}/api/v1/contacts/export${query}`, { headers: { Authorization: `Bearer ${key}` } });
    return { status: response.status, headers: response.headers, text: await response.text() };
  }

  it('streams every contact as RFC 4180 CSV with a header, tricky values intact, oldest first', async () => {
    const ws = await workspace();
    const em = scopeToOrg(h.stack.orm.em.fork(), ws.org.id);
    const tricky = 'Line one\nline "two", with a comma; and ünïcødé';
    em.create(Contact, {
      orgId: ws.org.id,
      email: 'ada@example.com',
      firstName: 'Ada',
      lastName: tricky,
      company: '=SUM(A1)',
      tags: ['vip', 'a;b'],
      customFields: { plan: 'pro', seats: 3 },
      createdAt: new Date('2026-01-01T00:00:00Z'),
    });
    em.create(Contact, { orgId: ws.org.id, email: 'bob@example.com', createdAt: new Date('2026-01-02T00:00:00Z') });
    await em.flush();

    const { status, headers, text } = await download(ws.key);
    expect(status).toBe(200);
    expect(headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(headers.get('content-disposition')).toMatch(/^attachment; filename="contacts-\d{4}-\d{2}-\d{2}\.csv"$/);
    const rows = parse<Record<string, string>>(text, { columns: true });
    expect(Object.keys(rows[0]!)).toEqual([...EXPORT_COLUMNS]);
    expect(rows.map((r) => r.email)).toEqual(['ada@example.com', 'bob@example.com']);
    // A cell a spreadsheet would run as a formula is escaped (see the next test).
    expect(rows[0]).toMatchObject({
      first_name: 'Ada',
      last_name: tricky,
      company: "'=SUM(A1)",
      status: 'active',
      created_at: '2026-01-01T00:00:00.000Z',
    });
    expect(JSON.parse(rows[0]!.tags!)).toEqual(['vip', 'a;b']);
    expect(JSON.parse(rows[0]!.custom_fields!)).toEqual({ plan: 'pro', seats: 3 });
    expect(rows[1]).toMatchObject({ tags: '', custom_fields: '', first_name: '' });
    // Each exported row is the contact as the API shows it.
    const viaApi = (await ws.request('GET', `/api/v1/contacts/${rows[0]!.id}`)).body.data as { email: string; updatedAt: string };
    expect(viaApi).toMatchObject({ email: 'ada@example.com', updatedAt: rows[0]!.updated_at });
  });

  it('pages through more contacts than one read (2,500) without losing or repeating one, filtered by status and segment', async () => {
    const ws = await workspace();
    const at = Date.UTC(2026, 0, 1);
    await h.stack.orm.em.getConnection().execute(
      `insert into contacts (id, org_id, email, status, tags, created_at, updated_at)
       select substr(md5(random()::text || g::text), 1, 24), ?, 'c' || g || '@example.com',
              case when g % 5 = 0 then 'unsubscribed' else 'active' end,
              case when g % 2 = 0 then '{even}'::text[] else '{}'::text[] end,
              to_timestamp(? / 1000.0) + (g / 3) * interval '1 millisecond', now()
         from generate_series(1, 2500) g`,
      [ws.org.id, at],
    );
    const all = parse<Record<string, string>>((await download(ws.key)).text, { columns: true });
    expect(all).toHaveLength(2500);
    expect(new Set(all.map((r) => r.id)).size).toBe(2500);
    expect(all.map((r) => r.created_at)).toEqual([...all.map((r) => r.created_at)].sort());

    const unsubscribed = parse<Record<string, string>>((await download(ws.key, '?status=unsubscribed')).text, { columns: true });
    expect(unsubscribed).toHaveLength(500);
    const segment = (await ws.request('POST', '/api/v1/segments', { headers: idem(), body: { name: 'Even', tags: ['even'] } })).body
      .data as { _id: string };
    const even = parse<Record<string, string>>((await download(ws.key, `?segment_id=${segment._id}`)).text, { columns: true });
    expect(even).toHaveLength(1250);
    expect(even.every((r) => Number(/^c(\d+)@/.exec(r.email!)![1]) % 2 === 0)).toBe(true);
  });

  it("answers a header-only file for no contacts, 404 for another workspace's segment, 400 for bad filters, 403 without contacts:read", async () => {
    const ws = await workspace();
    expect((await download(ws.key)).text.trim()).toBe(EXPORT_COLUMNS.join(','));
    const other = await workspace();
    const theirs = (await other.request('POST', '/api/v1/segments', { headers: idem(), body: { name: 'Theirs' } })).body.data as {
      _id: string;
    };
    expectError(await ws.request('GET', `/api/v1/contacts/export?segment_id=${theirs._id}`), 404, 'not_found');
    expectError(await ws.request('GET', '/api/v1/contacts/export?segment_id=nope'), 400, 'invalid_request');
    expectError(await ws.request('GET', '/api/v1/contacts/export?status=gone'), 400, 'invalid_request');
    const writer = await workspace(['contacts:write']);
    expectError(await writer.request('GET', '/api/v1/contacts/export'), 403, 'missing_scope');
  });

  describe('cells a spreadsheet would run as formulas (OWASP CSV injection)', () => {
    const formulas = {
      firstName: '=HYPERLINK("http://evil.test","x")',
      lastName: "+1+cmd|' /C calc'!A0",
      company: '-2+3',
      tags: ['@SUM(1)'],
      customFields: { note: '\tTab' },
    };

    it('escapes every cell starting with = + - @ tab or CR with a leading quote by default, and writes raw values with escape_formulas=false', async () => {
      const ws = await workspace();
      const em = scopeToOrg(h.stack.orm.em.fork(), ws.org.id);
      em.create(Contact, { orgId: ws.org.id, email: 'eve@example.com', ...formulas });
      em.create(Contact, { orgId: ws.org.id, email: 'ret@example.com', firstName: '\rReturn', lastName: "O'Brien", company: 'a=b' });
      await em.flush();

      const escaped = parse<Record<string, string>>((await download(ws.key)).text, { columns: true });
      expect(escaped[0]).toMatchObject({
        first_name: `'${formulas.firstName}`,
        last_name: `'${formulas.lastName}`,
        company: "'-2+3",
        // JSON cells start with [ or {: nothing to escape.
        tags: '["@SUM(1)"]',
        custom_fields: '{"note":"\\tTab"}',
      });
      expect(escaped[1]).toMatchObject({ first_name: "'\rReturn", last_name: "O'Brien", company: 'a=b' });
      expect(parse<Record<string, string>>((await download(ws.key, '?escape_formulas=true')).text, { columns: true })).toEqual(escaped);

      const raw = parse<Record<string, string>>((await download(ws.key, '?escape_formulas=false')).text, { columns: true });
      expect(raw[0]).toMatchObject({ first_name: formulas.firstName, last_name: formulas.lastName, company: '-2+3' });
      expect(raw[1]).toMatchObject({ first_name: '\rReturn' });
      expectError(await ws.request('GET', '/api/v1/contacts/export?escape_formulas=maybe'), 400, 'invalid_request');
    });

    it('escapes the error report of an import too (GET /contacts/imports/{id}/errors), raw with escape_formulas=false', async () => {
      const ws = await workspace();
      const em = scopeToOrg(h.stack.orm.em.fork(), ws.org.id);
      const run = em.create(ContactImport, { orgId: ws.org.id, status: 'completed', uploadExpiresAt: new Date() });
      await em.flush();
      em.create(ContactImportError, {
        importId: run.id,
        orgId: ws.org.id,
        row: 1,
        line: 2,
        email: "=cmd|' /C calc'!A0",
        reason: 'INVALID_EMAIL',
        message: 'The email is not a valid address.',
      });
      await em.flush();
      const report = async (query = '') => {
        const response = await fetch(`${h.api.url}/api/v1/contacts/imports/${run.id}/errors${query}`, {
          headers: { Authorization: `Bearer ${ws.key}` },
        });
        expect(response.status).toBe(200);
        return parse<Record<string, string>>(await response.text(), { columns: true });
      };
      expect(await report()).toEqual([
        { row: '1', line: '2', email: "'=cmd|' /C calc'!A0", reason: 'INVALID_EMAIL', message: 'The email is not a valid address.' },
      ]);
      expect((await report('?escape_formulas=false'))[0]!.email).toBe("=cmd|' /C calc'!A0");
    });
  });
});
