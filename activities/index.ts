import { createBroadcastActivities, type BroadcastActivityDeps } from './broadcasts.ts';
import { createContactImportActivities, type ContactImportActivityDeps } from './contact-imports.ts';
import { createDomainActivities, type DomainActivityDeps } from './domains.ts';
import { createInboundActivities, type InboundActivityDeps } from './inbound.ts';
import { createMaintenanceActivities, type MaintenanceDeps } from './maintenance.ts';
import { createSendActivities, type SendActivityDeps } from './sends.ts';
import { createUploadActivities, type UploadActivityDeps } from './uploads.ts';
import { createWebhookActivities, type WebhookActivityDeps } from './webhooks.ts';

export type ActivityDeps = MaintenanceDeps & ContactImportActivityDeps & DomainActivityDeps & WebhookActivityDeps & UploadActivityDeps & InboundActivityDeps & SendActivityDeps & BroadcastActivityDeps;

/** Builds every activity the worker registers, from the process's shared dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createMaintenanceActivities(deps),
    ...createDomainActivities(deps),
    ...createWebhookActivities(deps),
    ...createInboundActivities(deps),
    ...createUploadActivities(deps),
    ...createSendActivities(deps),
    ...createContactImportActivities(deps),
    ...createBroadcastActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
