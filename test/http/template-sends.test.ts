import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TransactionalEmail } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { expectError, type ApiResponse } from '../support/http.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';

/**
 * POST /outbox/emails with template_id + variables: a published template rendered with
 * Mustache (html escaped, subject and text plain), missing variables named by field path, and
 * the template's state checked; the rendered message is what the email row keeps.
 */
describe('template sends (template_id + variables)', () => {
  let h: ApiHarness;
  let domain: string;
  let orgId: string;
  const send = (body: Record<string, unknown>) => h.request('POST', '/api/v1/outbox/emails', { body, headers: idem() });
  const base = () => ({ from: `Shop <shop@${domain}>`, to: 'buyer@example.com' });
  const reasonOf = (response: ApiResponse) => (response.body.error?.details as { reason?: string } | undefined)?.reason;
  const fieldsOf = (response: ApiResponse) =>
    ((response.body.error?.details as { fields?: { path: string }[] } | undefined)?.fields ?? []).map((f) => f.path);

  async function template(fields: Record<string, unknown>, status: 'draft' | 'published' | 'archived' = 'published'): Promise<string> {
    const created = await h.request('POST', '/api/v1/templates', { headers: idem(), body: { name: 'Receipt', ...fields } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = (created.body.data as { _id: string })._id;
    if (status !== 'draft')
      expect((await h.request('PATCH', `/api/v1/templates/${id}`, { headers: idem(), body: { status } })).status).toBe(200);
    return id;
  }
  const stored = (id: string) => scopeToOrg(h.stack.orm.em, orgId).findOneOrFail(TransactionalEmail, { id }, { refresh: true });

  beforeAll(async () => {
    h = await startApiHarness({ SEND_HANDOFF_WAIT_MS: '0' });
    orgId = h.workspace.org.id;
    domain = (await addSendingDomain(h.stack.orm, orgId)).domain;
    await setCredits(h.stack.orm, orgId, 1_000);
  });
  afterAll(async () => h?.close());

  it('renders a published template: variables HTML-escaped in the html, plain in the subject and text, sections over lists', async () => {
    const id = await template({
      subject: 'Receipt for {{name}} — order {{order.number}}',
      html: '<p>Hi {{name}}, you paid {{amount}}.</p><ul>{{#items}}<li>{{title}}</li>{{/items}}</ul>{{^gift}}<p>Not a gift</p>{{/gift}}{{{footer}}}',
    });
    const response = await send({
      ...base(),
      template_id: id,
      text: 'Hi {{name}}, you paid {{amount}}.',
      variables: {
        name: 'Zoë <Q> & "co"',
        amount: '€12.50',
        order: { number: 'A-7' },
        items: [{ title: 'Mug <b>' }, { title: 'Tea' }],
        footer: '<hr>',
      },
    });
    expect(response.status, JSON.stringify(response.body)).toBe(202);
    const record = response.body.data as { _id: string; subject: string; template_id: string; template_version: number };
    expect(record).toMatchObject({ subject: 'Receipt for Zoë <Q> & "co" — order A-7', template_id: id, template_version: 2 });
    const email = await stored(record._id);
    expect(email.html).toBe(
      '<p>Hi Zoë &lt;Q&gt; &amp; &quot;co&quot;, you paid €12.50.</p><ul><li>Mug &lt;b&gt;</li><li>Tea</li></ul><p>Not a gift</p><hr>',
    );
    expect(email.text).toBe('Hi Zoë <Q> & "co", you paid €12.50.');
    expect(email.templateId).toBe(id);
  });

  it("takes the request subject in place of the template's, rendered with the same variables", async () => {
    const id = await template({ subject: 'Template subject', html: '<p>{{greeting}}</p>' });
    const response = await send({ ...base(), template_id: id, subject: 'Own subject for {{greeting}}', variables: { greeting: 'hello' } });
    expect(response.status, JSON.stringify(response.body)).toBe(202);
    expect((response.body.data as { subject: string }).subject).toBe('Own subject for hello');
  });

  it('answers 400 TEMPLATE_VARIABLE_MISSING naming each missing variable by path, and writes nothing', async () => {
    const id = await template({ subject: 'For {{name}}', html: '<p>{{amount}} {{order.number}}</p>{{#items}}{{title}}{{/items}}' });
    const before = await scopeToOrg(h.stack.orm.em, orgId).count(TransactionalEmail, {});
    const response = await send({ ...base(), template_id: id, variables: { amount: 3 } });
    expectError(response, 400, 'invalid_request');
    expect(reasonOf(response)).toBe('TEMPLATE_VARIABLE_MISSING');
    expect(fieldsOf(response).sort()).toEqual(['variables.name', 'variables.order.number']);
    expect(await scopeToOrg(h.stack.orm.em, orgId).count(TransactionalEmail, {})).toBe(before);
  });

  it('refuses a draft or archived template with 409 TEMPLATE_NOT_PUBLISHED and an unknown one with 404 TEMPLATE_NOT_FOUND', async () => {
    for (const status of ['draft', 'archived'] as const) {
      const response = await send({ ...base(), template_id: await template({ subject: 's', html: '<p>x</p>' }, status) });
      expectError(response, 409, 'conflict');
      expect(reasonOf(response)).toBe('TEMPLATE_NOT_PUBLISHED');
    }
    const unknown = await send({ ...base(), template_id: 'f'.repeat(24) });
    expectError(unknown, 404, 'not_found');
    expect(reasonOf(unknown)).toBe('TEMPLATE_NOT_FOUND');
  });

  it("does not send another workspace's template", async () => {
    const { createOrgWithKey } = await import('../support/factories.ts');
    const { apiClient } = await import('../support/http.ts');
    const other = await createOrgWithKey(h.stack.orm, { scopes: ['all'] });
    const theirs = await apiClient(h.api.url, other.key)('POST', '/api/v1/templates', {
      headers: idem(),
      body: { name: 'Theirs', subject: 's', html: '<p>x</p>' },
    });
    const theirId = (theirs.body.data as { _id: string })._id;
    await apiClient(h.api.url, other.key)('PATCH', `/api/v1/templates/${theirId}`, { headers: idem(), body: { status: 'published' } });
    const response = await send({ ...base(), template_id: theirId });
    expectError(response, 404, 'not_found');
  });

  it('validates the request around a template: html not with template_id, variables only with it, subject required without it, bounds on variables', async () => {
    const id = await template({ subject: 's', html: '<p>x</p>' });
    expect(fieldsOf(await send({ ...base(), template_id: id, html: '<p>mine</p>' }))).toContain('html');
    expect(fieldsOf(await send({ ...base(), text: 'x', subject: 'x', variables: { a: 1 } }))).toContain('variables');
    expect(fieldsOf(await send({ ...base(), text: 'no subject' }))).toContain('subject');
    expect(fieldsOf(await send({ ...base(), template_id: 'not-an-id' }))).toContain('template_id');
    const hundred = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`v${i}`, i]));
    expect((await send({ ...base(), template_id: id, variables: hundred })).status).toBe(202);
    const tooMany = await send({ ...base(), template_id: id, variables: { ...hundred, v100: 1 } });
    expectError(tooMany, 400, 'invalid_request');
    expect(fieldsOf(tooMany)).toContain('variables');
    expect(
      fieldsOf(await send({ ...base(), template_id: id, variables: { 'bad name': 1 } })).some((path) => path.startsWith('variables')),
    ).toBe(true);
    const big = await send({ ...base(), template_id: id, variables: { blob: 'x'.repeat(64 * 1024) } });
    expect(fieldsOf(big)).toContain('variables');
  });

  it('refuses a template that renders to an empty message and one with a syntax error', async () => {
    const empty = await template({ subject: 'Empty', html: '{{#never}}x{{/never}}' });
    const response = await send({ ...base(), template_id: empty });
    expectError(response, 400, 'invalid_request');
    expect(reasonOf(response)).toBe('EMPTY_BODY');
    const broken = await template({ subject: 'Broken', html: '<p>{{#open}}never closed</p>' });
    const refused = await send({ ...base(), template_id: broken });
    expectError(refused, 400, 'invalid_request');
    expect(reasonOf(refused)).toBe('TEMPLATE_INVALID');
  });
});
