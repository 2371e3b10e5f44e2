import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Template } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { createAutomationsAdmin } from '../../src/modules/automations/automations.admin.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import { createBlobStore } from '../../src/blob/open-blob-store.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { insertAttachment, insertMessage } from '../support/inbox-rows.ts';

/** The spec's field lists ("Resources and their fields"), name for name. */
const SPEC = {
  contact: ['_id', 'email', 'firstName', 'lastName', 'company', 'tags', 'customFields', 'status', 'createdAt', 'updatedAt'],
  segment: ['_id', 'name', 'description', 'type', 'tags', 'contactCount', 'createdAt', 'updatedAt'],
  automation: ['_id', 'name', 'description', 'status', 'trigger_type', 'stats', 'version', 'created_at', 'updated_at'],
  automationStats: ['totalRuns', 'activeRuns', 'completedRuns', 'failedRuns', 'emailsSent', 'creditsUsed'],
  template: [
    '_id',
    'name',
    'description',
    'subject',
    'preview_text',
    'html',
    'category',
    'tags',
    'folder_id',
    'status',
    'version',
    'created_at',
    'updated_at',
  ],
  broadcast: [
    '_id',
    'name',
    'subject',
    'previewText',
    'fromName',
    'fromEmail',
    'groupIds',
    'status',
    'scheduledAt',
    'metrics',
    'createdAt',
  ],
  domainOption: ['_id', 'domain', 'verified', 'isDefault', 'domainSource', 'deliverability', 'sender_options'],
  senderOption: ['id', 'name', 'email', 'is_default', 'verified'],
  keyContext: [
    'org_id',
    'org_slug',
    'org_name',
    'actor_user_id',
    'key_id',
    'auth_method',
    'scopes',
    'enabled_scope_catalog',
    'rate_limit_profile',
  ],
  scopeEntry: ['id', 'domain', 'access', 'launch', 'description'],
  metrics: ['summary', 'rates', 'dailyVolume', 'topCampaigns', 'contacts', 'domains', 'period'],
  metricsSummary: ['sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed', 'campaigns'],
  metricsRates: ['delivery', 'open', 'click', 'ctor', 'bounce', 'complaint', 'unsubscribe'],
  metricsDaily: ['date', 'sent', 'delivered', 'opened', 'clicked', 'bounced'],
  metricsContacts: ['total', 'active', 'unsubscribed', 'bounced', 'complained'],
  attachmentUpload: ['attachment_id', 'upload_url', 'expires_at', 'required_headers'],
  inboxMessage: [
    'id',
    'thread_id',
    'direction',
    'subject',
    'text',
    'from',
    'to',
    'rfc_message_id',
    'in_reply_to_message_id',
    'references_rfc',
    'attachments',
    'attachment_ingest_status',
    'failed_attachments',
    'attachment_count',
    'attachments_ready',
    'created_at',
    'updated_at',
  ],
  inboxAttachment: ['id', 'filename', 'content_type', 'size_bytes'],
  mailbox: ['email', 'name'],
};

/** Herald's additions to the spec's Inbox message (marked as extensions in OpenAPI), in lists and on GET by id. */
const INBOX_EXTENSIONS = ['cc', 'kind', 'auth_results', 'email_id', 'sent_at', 'read', 'read_at', 'starred', 'tags'];
const INBOX_DETAIL_EXTENSIONS = [...INBOX_EXTENSIONS, 'html', 'in_reply_to', 'replies'];
/** Herald's additions to the spec's Domain option: `ip_pool` (egress IP pools), `warmup` (automatic warm-up). */
const DOMAIN_EXTENSIONS = ['ip_pool', 'warmup'];
/** Herald's addition to the spec's Broadcast: `stream` (the message stream of its messages). */
const BROADCAST_EXTENSIONS = ['stream'];

const keys = (value: unknown) => Object.keys(value as object).sort();
const sorted = (list: string[]) => [...list].sort();

describe("responses carry exactly the spec's field names and casing", () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(() => h.close());

  const ok = async (method: string, path: string, body?: unknown) => {
    const response = await h.request(method, path, { ...(method === 'GET' ? {} : { headers: idem() }), ...(body ? { body } : {}) });
    expect(response.status, `${method} ${path}: ${JSON.stringify(response.body)}`).toBeLessThan(300);
    return response.body.data;
  };

  it('Key context (GET /me)', async () => {
    const data = (await ok('GET', '/api/v1/me')) as { enabled_scope_catalog: unknown[] };
    expect(keys(data)).toEqual(sorted(SPEC.keyContext));
    for (const entry of data.enabled_scope_catalog) expect(keys(entry)).toEqual(sorted(SPEC.scopeEntry));
  });

  it('Contact', async () => {
    const created = await ok('POST', '/api/v1/contacts', { email: 'fields@example.com' });
    expect(keys(created)).toEqual(sorted(SPEC.contact));
    expect(keys(((await ok('GET', '/api/v1/contacts')) as unknown[])[0])).toEqual(sorted(SPEC.contact));
  });

  it('Segment', async () => {
    const created = await ok('POST', '/api/v1/segments', { name: 'Fields', tags: ['x'] });
    expect(keys(created)).toEqual(sorted(SPEC.segment));
    expect(keys(((await ok('GET', '/api/v1/segments')) as unknown[])[0])).toEqual(sorted(SPEC.segment));
  });

  it('Automation', async () => {
    const automation = await createAutomationsAdmin({ orm: h.stack.orm }).createAutomation({
      orgId: h.workspace.org.id,
      name: 'Fields',
      definition: { trigger: { type: 'contact.created' }, start: 'done', steps: [{ id: 'done', type: 'exit' }] },
    });
    const data = (await ok('GET', `/api/v1/automations/${automation.id}`)) as { stats: unknown };
    expect(keys(data)).toEqual(sorted(SPEC.automation));
    expect(keys(data.stats)).toEqual(sorted(SPEC.automationStats));
  });

  it('Template', async () => {
    const created = await ok('POST', '/api/v1/templates', { name: 'Fields' });
    expect(keys(created)).toEqual(sorted(SPEC.template));
    const em = scopeToOrg(h.stack.orm.em, h.workspace.org.id);
    expect(await em.count(Template, {})).toBe(1);
  });

  it('Domain option, sender option and Broadcast', async () => {
    const domains = createDomainsService({ orm: h.stack.orm, encryptionKey: h.stack.config.encryptionKey });
    const domain = await domains.addDomain({ orgId: h.workspace.org.id, domain: 'fields.example.com', verified: true });
    await domains.addSender({ domainId: domain.id, email: 'hi@fields.example.com', name: 'Fields' });
    const [option] = (await ok('GET', '/api/v1/domains')) as { sender_options: unknown[] }[];
    expect(keys(option)).toEqual(sorted([...SPEC.domainOption, ...DOMAIN_EXTENSIONS]));
    expect(keys(option!.sender_options[0])).toEqual(sorted(SPEC.senderOption));

    const segment = (await ok('POST', '/api/v1/segments', { name: 'Audience' })) as { _id: string };
    const broadcast = await ok('POST', '/api/v1/outbox/broadcasts', {
      name: 'Fields',
      subject: 'Hello',
      from_name: 'Fields',
      from_email: 'hi@fields.example.com',
      segment_ids: [segment._id],
    });
    expect(keys(broadcast)).toEqual(sorted([...SPEC.broadcast, ...BROADCAST_EXTENSIONS]));
  });

  it('Attachment upload', async () => {
    const created = await ok('POST', '/api/v1/outbox/attachments', {
      filename: 'fields.pdf',
      content_type: 'application/pdf',
      size_bytes: 10,
    });
    expect(keys(created)).toEqual(sorted(SPEC.attachmentUpload));
  });

  it('Inbox message', async () => {
    const blobs = await createBlobStore(h.stack.config);
    const message = await insertMessage(h.stack.orm, h.workspace.org.id, { attachmentCount: 1 });
    await insertAttachment(h.stack.orm, h.workspace.org.id, {
      messageId: message.id,
      blobs: blobs!,
      filename: 'a.txt',
      contentType: 'text/plain',
    });
    const [listed] = (await ok('GET', '/api/v1/inbox/messages')) as Record<string, unknown>[];
    expect(keys(listed)).toEqual(sorted([...SPEC.inboxMessage, ...INBOX_EXTENSIONS]));
    const data = (await ok('GET', `/api/v1/inbox/messages/${message.id}`)) as { from: unknown; to: unknown[]; attachments: unknown[] };
    expect(keys(data)).toEqual(sorted([...SPEC.inboxMessage, ...INBOX_DETAIL_EXTENSIONS]));
    expect(keys(data.attachments[0])).toEqual(sorted(SPEC.inboxAttachment));
    expect(keys(data.from)).toEqual(sorted(SPEC.mailbox));
    expect(keys(data.to[0])).toEqual(sorted(SPEC.mailbox));
  });

  it('Metrics summary', async () => {
    const data = (await ok('GET', '/api/v1/metrics?period=7d')) as Record<string, unknown> & { dailyVolume: unknown[] };
    expect(keys(data)).toEqual(sorted(SPEC.metrics));
    expect(keys(data.summary)).toEqual(sorted(SPEC.metricsSummary));
    expect(keys(data.rates)).toEqual(sorted(SPEC.metricsRates));
    expect(keys(data.contacts)).toEqual(sorted(SPEC.metricsContacts));
    expect(data.dailyVolume).toHaveLength(7);
    expect(keys(data.dailyVolume[0])).toEqual(sorted(SPEC.metricsDaily));
  });
});
