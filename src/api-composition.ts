import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { BlobStore } from './blob/blob-store.ts';
import type { Config } from './config.ts';
import { createDnsResolver } from './dns/resolver.ts';
import type { Logger } from './logger.ts';
import { createAttachmentsRoutes } from './modules/attachments/attachments.routes.ts';
import { createAttachmentsServiceFromConfig } from './modules/attachments/attachments.service.ts';
import { createAutomationHistory } from './modules/automations/automation-history.service.ts';
import { createAutomationWaker } from './modules/automations/automation-wake.ts';
import { createAutomationsRoutes } from './modules/automations/automations.routes.ts';
import { createAutomationsService } from './modules/automations/automations.service.ts';
import { createContactEventsRoutes } from './modules/contact-events/contact-events.routes.ts';
import { createContactEventsService } from './modules/contact-events/contact-events.service.ts';
import { createBroadcastsRoutes } from './modules/broadcasts/broadcasts.routes.ts';
import { createBroadcastsService } from './modules/broadcasts/broadcasts.service.ts';
import { createContactImportsRoutes } from './modules/contacts/contact-imports.routes.ts';
import { createContactImportsService } from './modules/contacts/contact-imports.service.ts';
import { createContactsRoutes } from './modules/contacts/contacts.routes.ts';
import { createContactsService } from './modules/contacts/contacts.service.ts';
import { createContactTimelineService } from './modules/contacts/contact-timeline.service.ts';
import { createApiKeysRoutes } from './modules/auth/api-keys.routes.ts';
import { createWorkspaceKeysService } from './modules/auth/workspace-keys.service.ts';
import { createSuppressionsRoutes } from './modules/suppressions/suppressions.routes.ts';
import { createSuppressionsService } from './modules/suppressions/suppressions.service.ts';
import { createStreamsRoutes } from './modules/streams/streams.routes.ts';
import { createStreamsService } from './modules/streams/streams.service.ts';
import { createDomainsRoutes } from './modules/domains/domains.routes.ts';
import { createDomainPoolRoutes } from './modules/egress/domain-pool.routes.ts';
import { createDomainPoolService } from './modules/egress/domain-pool.service.ts';
import { createDomainsService } from './modules/domains/domains.service.ts';
import { createDmarcRoutes } from './modules/dmarc/dmarc.routes.ts';
import { createDmarcService } from './modules/dmarc/dmarc.service.ts';
import { createReputationService } from './modules/reputation/reputation.service.ts';
import { createWarmupRoutes } from './modules/warmup/warmup.routes.ts';
import { createWarmupService } from './modules/warmup/warmup.service.ts';
import { createTrackingDomainsRoutes } from './modules/tracking/tracking-domains.routes.ts';
import { createTrackingDomains } from './modules/tracking/tracking-domains.service.ts';
import { createInboxRoutes } from './modules/inbox/inbox.routes.ts';
import { createInboxService } from './modules/inbox/inbox.service.ts';
import { createInboxStateService } from './modules/inbox/inbox-state.service.ts';
import { createMeRoutes } from './modules/me/me.routes.ts';
import { createMetricsRoutes } from './modules/metrics/metrics.routes.ts';
import { createMetricsService } from './modules/metrics/metrics.service.ts';
import { createSendsRoutes } from './modules/sends/sends.routes.ts';
import { createSendsService } from './modules/sends/sends.service.ts';
import { createBatchSender } from './modules/sends/batch.ts';
import type { IdempotencyStore } from './modules/idempotency/idempotency.store.ts';
import { createSegmentsRoutes } from './modules/segments/segments.routes.ts';
import { createSegmentsService } from './modules/segments/segments.service.ts';
import { createMembershipService } from './modules/segments/membership.service.ts';
import { createTemplatesRoutes } from './modules/templates/templates.routes.ts';
import { createTemplatesService } from './modules/templates/templates.service.ts';
import { createDeliveriesService } from './modules/webhooks/deliveries.service.ts';
import { createWebhooksRoutes } from './modules/webhooks/webhooks.routes.ts';
import { createWebhooksService, sealedSecretResponse } from './modules/webhooks/webhooks.service.ts';
import type { OffloadPool } from './offload/offload-pool.ts';
import type { CursorCodec } from './http/cursor.ts';
import type { AnyRoute } from './http/route.ts';
import { createDomainChecks } from './modules/domains/domain-verification.starter.ts';
import { createDomainRemoval } from './modules/domains/domain-removal.service.ts';
import { createOrgsService } from './modules/orgs/orgs.service.ts';

/** What the api process's services are built from. */
export interface ApiServiceDeps {
  orm: MikroORM;
  config: Config;
  temporal: Client;
  logger: Logger;
  /** Decodes inline attachments off the event loop (the api process's offload thread). */
  offload?: OffloadPool;
  /** Idempotency records (the batch send keeps one per message). */
  idempotency: IdempotencyStore;
  /** The process's blob store (src/blob/open-blob-store.ts); null: none configured. */
  blobs: BlobStore | null;
}

/**
 * The api process's services, each built once: the public API's routes and the dashboard's
 * pages use the same ones (the same rules, tenancy and audit; issue 17).
 */
export function createApiServices(deps: ApiServiceDeps) {
  const { blobs } = deps;
  const dns = createDnsResolver(deps.config);
  const templates = createTemplatesService({ orm: deps.orm });
  // Wakes, after their commit, the automations that contact changes and events gave runs.
  const wakeAutomations = createAutomationWaker({ client: deps.temporal, config: deps.config, logger: deps.logger });
  const contacts = createContactsService({ orm: deps.orm, dns, checkMailServer: deps.config.dns.checkContacts, wakeAutomations });
  const inbox = createInboxService({ orm: deps.orm, blobs });
  const sends = createSendsService({
    orm: deps.orm,
    blobs,
    temporal: deps.temporal,
    config: deps.config,
    logger: deps.logger,
    templates,
    ...(deps.offload ? { offload: deps.offload } : {}),
  });
  return {
    config: deps.config,
    domains: createDomainsService({ orm: deps.orm, encryptionKey: deps.config.encryptionKey }),
    domainChecks: createDomainChecks({ orm: deps.orm, temporal: deps.temporal, config: deps.config }),
    domainRemoval: createDomainRemoval({ orm: deps.orm }),
    dmarc: createDmarcService({ orm: deps.orm }),
    warmup: createWarmupService({ orm: deps.orm }),
    reputation: createReputationService({ orm: deps.orm }),
    trackingDomains: createTrackingDomains({ orm: deps.orm, dns, publicUrl: deps.config.http.publicUrl }),
    domainPools: createDomainPoolService({ orm: deps.orm, egress: deps.config.egress }),
    orgs: createOrgsService({ orm: deps.orm }),
    contactImports: createContactImportsService({ orm: deps.orm, blobs, temporal: deps.temporal, config: deps.config }),
    contacts,
    contactTimeline: createContactTimelineService({ orm: deps.orm, contacts }),
    workspaceKeys: createWorkspaceKeysService({ orm: deps.orm }),
    suppressions: createSuppressionsService({ orm: deps.orm, contacts }),
    streams: createStreamsService({ orm: deps.orm }),
    segments: createSegmentsService({ orm: deps.orm, logger: deps.logger }),
    membership: createMembershipService({ orm: deps.orm, wakeAutomations }),
    contactEvents: createContactEventsService({ orm: deps.orm, wakeAutomations }),
    automations: createAutomationsService({
      orm: deps.orm,
      // Activating an automation with runs in progress wakes its actor after the commit.
      wake: wakeAutomations,
    }),
    automationHistory: createAutomationHistory({ orm: deps.orm }),
    templates,
    broadcasts: createBroadcastsService({ orm: deps.orm, temporal: deps.temporal, config: deps.config, logger: deps.logger }),
    sends,
    batch: createBatchSender({ sends, idempotency: deps.idempotency }),
    attachments: createAttachmentsServiceFromConfig(deps.orm, deps.config, blobs),
    metrics: createMetricsService({ orm: deps.orm }),
    inbox,
    inboxState: createInboxStateService({ orm: deps.orm, inbox }),
    webhooks: createWebhooksService({
      orm: deps.orm,
      encryptionKey: deps.config.encryptionKey,
      allowPrivateTargets: deps.config.webhooks.allowPrivateTargets,
    }),
    deliveries: createDeliveriesService({ orm: deps.orm, temporal: deps.temporal, config: deps.config, logger: deps.logger }),
  };
}

export type ApiServices = ReturnType<typeof createApiServices>;

/** Every operation of the public API, on the process's services. */
export function createRoutes(services: ApiServices, cursors: CursorCodec): AnyRoute[] {
  const sealedSecret = sealedSecretResponse(services.config.encryptionKeys);
  return [
    ...createMeRoutes(),
    ...createDomainsRoutes({ domains: services.domains, warmup: services.warmup, settings: services.config }),
    ...createDmarcRoutes({ dmarc: services.dmarc, cursors }),
    ...createWarmupRoutes({ warmup: services.warmup, reputation: services.reputation }),
    ...createTrackingDomainsRoutes({ tracking: services.trackingDomains }),
    ...createDomainPoolRoutes({ pools: services.domainPools }),
    // Before the contacts' /contacts/:id, which would otherwise take `imports` for an id.
    ...createContactImportsRoutes({ imports: services.contactImports, cursors }),
    ...createContactsRoutes({ contacts: services.contacts, cursors }),
    ...createContactEventsRoutes({ events: services.contactEvents }),
    ...createApiKeysRoutes({ keys: services.workspaceKeys, cursors, sealedSecret }),
    ...createSuppressionsRoutes({ suppressions: services.suppressions, cursors }),
    ...createStreamsRoutes({ streams: services.streams }),
    ...createSegmentsRoutes({ segments: services.segments, membership: services.membership, cursors }),
    ...createAutomationsRoutes({ automations: services.automations, history: services.automationHistory, cursors }),
    ...createTemplatesRoutes({ templates: services.templates, cursors }),
    ...createBroadcastsRoutes({ broadcasts: services.broadcasts, cursors }),
    ...createSendsRoutes({ sends: services.sends, batch: services.batch, cursors }),
    ...createAttachmentsRoutes({ attachments: services.attachments }),
    ...createMetricsRoutes({ metrics: services.metrics }),
    ...createInboxRoutes({ inbox: services.inbox, state: services.inboxState, cursors }),
    ...createWebhooksRoutes({ webhooks: services.webhooks, deliveries: services.deliveries, cursors, sealedSecret }),
  ];
}
