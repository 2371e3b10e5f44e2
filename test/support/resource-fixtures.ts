import { createStreamsService } from '../../src/modules/streams/streams.service.ts';
import * as v from 'valibot';
import { Broadcast, Contact, ContactImport } from '../../db/entities/index.ts';
import { newId } from '../../db/ids.ts';
import { scopeToOrg, type MikroORM } from '../../db/orm.ts';
import { createBlobStore } from '../../src/blob/open-blob-store.ts';
import type { Config } from '../../src/config.ts';
import { CreateTemplateBody } from '../../src/modules/templates/templates.schemas.ts';
import { createTemplatesService } from '../../src/modules/templates/templates.service.ts';
import { unique } from './factories.ts';
import { createSegmentsService } from '../../src/modules/segments/segments.service.ts';
import { addSendingDomain, insertScheduledEmail } from './sending.ts';
import { suppressAddress } from '../../src/modules/sends/suppression.repo.ts';
import { createApiKeysService } from '../../src/modules/auth/api-keys.service.ts';
import { insertAttachment, insertMessage, insertThread } from './inbox-rows.ts';
import { insertDelivery, insertEndpoint } from './webhook-rows.ts';
import { createPublishedAutomation, insertRun } from './automation-rows.ts';

/**
 * For every route with an `:id`: how to create, in a given workspace, the resource the id
 * names, and a body that passes validation. The shared route suite uses it to prove that
 * another workspace's id answers 404; it fails for a route that has no entry here.
 */
export interface ResourceFixture {
  /** `config` is the running api's (e.g. its BLOB_DIR, for a resource with bytes). */
  create(orm: MikroORM, orgId: string, context: { config: Config }): Promise<string>;
  validBody?: Record<string, unknown>;
}

/** A broadcast that can be launched (a verified domain, a segment, a body), in `status`. */
function broadcast(status: 'draft' | 'scheduled' = 'draft'): ResourceFixture {
  return {
    async create(orm, orgId) {
      const domain = await addSendingDomain(orm, orgId);
      const segment = await createSegmentsService({ orm }).createSegment(orgId, { name: unique('segment'), description: '', tags: [] });
      const em = scopeToOrg(orm.em.fork(), orgId);
      const row = em.create(Broadcast, {
        orgId,
        name: unique('broadcast'),
        subject: 'Suite',
        fromName: 'Suite',
        fromEmail: `suite@${domain.domain}`,
        segmentIds: [segment.segment.id],
        html: '<p>Suite</p>',
        status,
        ...(status === 'scheduled' ? { scheduledAt: new Date(Date.now() + 3_600_000), domainId: domain.id, launchedAt: new Date() } : {}),
      });
      await em.flush();
      return row.id;
    },
  };
}

const contact: ResourceFixture = {
  async create(orm, orgId) {
    const em = scopeToOrg(orm.em, orgId);
    const row = em.create(Contact, { orgId, email: `${unique('c')}@example.com` });
    await em.flush();
    return row.id;
  },
};

const contactImport: ResourceFixture = {
  async create(orm, orgId) {
    const em = scopeToOrg(orm.em, orgId);
    const row = em.create(ContactImport, { orgId, uploadExpiresAt: new Date(Date.now() + 60_000) });
    await em.flush();
    return row.id;
  },
};

/** An automation with a published definition. */
const automation = (validBody?: Record<string, unknown>): ResourceFixture => ({
  create: async (orm, orgId) => (await createPublishedAutomation(orm, orgId)).id,
  ...(validBody ? { validBody } : {}),
});

/** An automation with one run whose id is the automation's own id (the suite fills every path parameter with the same id). */
const automationRun: ResourceFixture = {
  async create(orm, orgId) {
    const created = await createPublishedAutomation(orm, orgId);
    await insertRun(orm, orgId, created, { id: created.id });
    return created.id;
  },
};

const template = (validBody?: Record<string, unknown>): ResourceFixture => ({
  create: async (orm, orgId) =>
    (await createTemplatesService({ orm }).createTemplate(orgId, v.parse(CreateTemplateBody, { name: unique('template') }))).id,
  ...(validBody ? { validBody } : {}),
});

/**
 * An inbox message with one stored attachment whose id is the message's own id (the suite
 * fills every path parameter with the same id), its bytes in the api's blob store.
 */
const inboxAttachment: ResourceFixture = {
  async create(orm, orgId, { config }) {
    const blobs = await createBlobStore(config);
    if (!blobs) throw new Error('the route suite needs BLOB_DIR for attachment downloads');
    const id = newId();
    await insertMessage(orm, orgId, { id, attachmentCount: 1 });
    await insertAttachment(orm, orgId, { id, messageId: id, blobs, bytes: Buffer.from('suite bytes') });
    return id;
  },
};

async function staticSegment(orm: MikroORM, orgId: string): Promise<string> {
  return (await createSegmentsService({ orm }).createSegment(orgId, { name: unique('segment'), description: '', tags: [], type: 'static' }))
    .segment.id;
}

const domain = (validBody?: Record<string, unknown>): ResourceFixture => ({
  create: async (orm, orgId) => (await addSendingDomain(orm, orgId)).id,
  ...(validBody ? { validBody } : {}),
});
/** A custom message stream of the workspace; its name is the path's id. */
function stream(): ResourceFixture {
  return {
    async create(orm, orgId) {
      const name = unique('stream')
        .toLowerCase()
        .replace(/[^a-z0-9_-]/g, '-');
      await createStreamsService({ orm }).createStream(orgId, { name, kind: 'broadcast' });
      return name;
    },
  };
}

export const RESOURCE_FIXTURES: Record<string, ResourceFixture> = {
  getDomainDmarc: domain(),
  updateDomainDmarc: domain({ report_local_part: 'reports' }),
  updateDomainWarmup: domain({ mode: 'off' }),
  setDomainTrackingHost: domain({ host: null }),
  checkDomainTrackingHost: domain(),
  listDmarcReports: domain(),
  listDmarcSources: domain(),
  getAutomation: automation(),
  updateAutomation: automation({ name: 'Renamed by the route suite' }),
  deleteAutomation: automation(),
  listAutomationRuns: automation(),
  getAutomationRun: automationRun,
  getAutomationDefinition: automation(),
  getBroadcast: broadcast(),
  sendBroadcast: { ...broadcast(), validBody: {} },
  cancelBroadcast: broadcast('scheduled'),
  updateBroadcast: { ...broadcast(), validBody: { name: 'Renamed by the route suite' } },
  deleteBroadcast: broadcast(),
  getContact: contact,
  updateContact: { ...contact, validBody: { first_name: 'Grace' } },
  deleteContact: contact,
  getContactImport: contactImport,
  getContactImportErrors: contactImport,
  getTemplate: template(),
  updateTemplate: template({ name: 'Renamed by the route suite' }),
  deleteTemplate: template(),
  listSegmentContacts: {
    create: async (orm, orgId) =>
      (await createSegmentsService({ orm }).createSegment(orgId, { name: unique('segment'), description: '', tags: [] })).segment.id,
  },
  addSegmentContacts: { create: staticSegment, validBody: { emails: ['suite@example.com'] } },
  removeSegmentContacts: { create: staticSegment, validBody: { emails: ['suite@example.com'] } },
  getInboxMessage: { create: async (orm, orgId) => (await insertMessage(orm, orgId)).id },
  updateInboxMessage: { create: async (orm, orgId) => (await insertMessage(orm, orgId)).id, validBody: { starred: true } },
  getInboxThread: { create: async (orm, orgId) => (await insertThread(orm, orgId)).id },
  updateInboxThread: { create: async (orm, orgId) => (await insertThread(orm, orgId)).id, validBody: { archived: true } },
  downloadInboxAttachment: inboxAttachment,
  updateDomain: domain({ ip_pool: null }),
  getEmail: { create: insertScheduledEmail },
  cancelEmail: { create: insertScheduledEmail },
  getWebhook: { create: async (orm, orgId) => (await insertEndpoint(orm, orgId)).id },
  updateWebhook: { create: async (orm, orgId) => (await insertEndpoint(orm, orgId)).id, validBody: { name: 'Renamed by the route suite' } },
  deleteWebhook: { create: async (orm, orgId) => (await insertEndpoint(orm, orgId)).id },
  rotateWebhookSecret: { create: async (orm, orgId) => (await insertEndpoint(orm, orgId)).id, validBody: { overlap_seconds: 60 } },
  replayWebhookDelivery: { create: async (orm, orgId) => (await insertDelivery(orm, orgId, { status: 'delivered' })).id },
  revokeApiKey: {
    create: async (orm, orgId) =>
      (await createApiKeysService({ orm }).createApiKey({ orgId, scopes: ['me:read'], name: unique('key') })).apiKey.id,
  },
  // The path parameter is the suppressed address itself.
  removeSuppression: {
    async create(orm, orgId) {
      const email = `${unique('s')}@example.com`.toLowerCase();
      await suppressAddress(orm.em.fork(), orgId, email, 'manual');
      return email;
    },
  },
  getStream: stream(),
  updateStream: { ...stream(), validBody: { daily_cap: 10 } },
  deleteStream: stream(),
};

/** A body that passes validation for routes without an id (for the write-route checks). */
export const VALID_BODIES: Record<string, () => Record<string, unknown>> = {
  createContact: () => ({ email: `${unique('suite')}@example.com` }),
  createStream: () => ({
    name: unique('stream')
      .toLowerCase()
      .replace(/[^a-z0-9_-]/g, '-'),
    kind: 'transactional',
  }),
  createSegment: () => ({ name: unique('segment'), tags: ['suite'] }),
  createTemplate: () => ({ name: unique('template') }),
  createWebhook: () => ({ name: unique('webhook'), url: 'https://receiver.example.com/hook', events: ['contact.created'] }),
  createContactImport: () => ({ filename: 'suite.csv' }),
  trackEvent: () => ({ event: 'suite.event', email: 'suite@example.com' }),
  createAttachmentUpload: () => ({ filename: `${unique('file')}.pdf`, content_type: 'application/pdf', size_bytes: 1024 }),
};
