import { createAutomationActivities, type AutomationActivityDeps } from './automations.ts';
import { createBroadcastActivities, type BroadcastActivityDeps } from './broadcasts.ts';
import { createContactImportActivities, type ContactImportActivityDeps } from './contact-imports.ts';
import { createDomainActivities, type DomainActivityDeps } from './domains.ts';
import { createInboundActivities, type InboundActivityDeps } from './inbound.ts';
import { createMaintenanceActivities, type MaintenanceDeps } from './maintenance.ts';
import { createSendActivities, type SendActivityDeps } from './sends.ts';
import { createUploadActivities, type UploadActivityDeps } from './uploads.ts';
import { createWebhookActivities, type WebhookActivityDeps } from './webhooks.ts';
import type { AutomationActivities } from '../workflows/automation.ts';
import type { BroadcastActivities } from '../workflows/broadcasts.ts';
import type { ContactImportActivities } from '../workflows/contact-imports.ts';
import type { DomainActivities } from '../workflows/domains.ts';
import type { InboundCleanupActivities } from '../workflows/inbound.ts';
import type { InboundIntakeActivities } from '../workflows/inbound-intake.ts';
import type { MaintenanceActivities } from '../workflows/maintenance.ts';
import type { SendDomainActivities } from '../workflows/send-domain.ts';
import type { UploadCleanupActivities } from '../workflows/uploads.ts';
import type { WebhookEndpointActivities } from '../workflows/webhook-endpoint.ts';

/**
 * Every activity a workflow calls, as the workflows declare them (each workflow file owns its
 * activities' contract; workflows never import activities/). The worker registers exactly these.
 */
export type HeraldActivities = AutomationActivities &
  BroadcastActivities &
  ContactImportActivities &
  DomainActivities &
  InboundCleanupActivities &
  InboundIntakeActivities &
  MaintenanceActivities &
  SendDomainActivities &
  UploadCleanupActivities &
  WebhookEndpointActivities;

export type ActivityDeps = MaintenanceDeps &
  ContactImportActivityDeps &
  DomainActivityDeps &
  WebhookActivityDeps &
  UploadActivityDeps &
  InboundActivityDeps &
  SendActivityDeps &
  BroadcastActivityDeps &
  AutomationActivityDeps;

/** Builds every activity the worker registers, from the process's shared dependencies. */
export function createActivities(deps: ActivityDeps): HeraldActivities {
  return {
    ...createMaintenanceActivities(deps),
    ...createDomainActivities(deps),
    ...createWebhookActivities(deps),
    ...createInboundActivities(deps),
    ...createUploadActivities(deps),
    ...createSendActivities(deps),
    ...createContactImportActivities(deps),
    ...createBroadcastActivities(deps),
    ...createAutomationActivities(deps),
  };
}
