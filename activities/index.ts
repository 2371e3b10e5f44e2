import { createMaintenanceActivities, type MaintenanceDeps } from './maintenance.ts';

export type ActivityDeps = MaintenanceDeps;

/** Builds every activity the worker registers, from the process's shared dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createMaintenanceActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
