import { createDomainActivities, type DomainActivityDeps } from './domains.ts';
import { createMaintenanceActivities, type MaintenanceDeps } from './maintenance.ts';

export type ActivityDeps = MaintenanceDeps & DomainActivityDeps;

/** Builds every activity the worker registers, from the process's shared dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createMaintenanceActivities(deps),
    ...createDomainActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
