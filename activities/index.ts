import { createDomainActivities, type DomainActivityDeps } from './domains.ts';
import { createMaintenanceActivities, type MaintenanceDeps } from './maintenance.ts';
import { createWebhookActivities, type WebhookActivityDeps } from './webhooks.ts';

export type ActivityDeps = MaintenanceDeps & DomainActivityDeps & WebhookActivityDeps;

/** Builds every activity the worker registers, from the process's shared dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createMaintenanceActivities(deps),
    ...createDomainActivities(deps),
    ...createWebhookActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
