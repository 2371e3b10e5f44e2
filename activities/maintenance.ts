import type { MikroORM } from '@mikro-orm/postgresql';
import { IdempotencyRecord } from '../db/entities/index.ts';
import { ALL_TENANTS } from '../db/orm.ts';

export interface MaintenanceDeps {
  orm: MikroORM;
}

/**
 * Maintenance activities. Each is idempotent: running one twice after a crash deletes
 * nothing that the first run did not already consider expired.
 */
export function createMaintenanceActivities({ orm }: MaintenanceDeps) {
  return {
    /** Deletes idempotency records whose 24-hour window has passed; returns how many. */
    async deleteExpiredIdempotencyRecords(): Promise<{ deleted: number }> {
      const em = orm.em.fork();
      const deleted = await em.nativeDelete(IdempotencyRecord, { expiresAt: { $lt: new Date() } }, ALL_TENANTS);
      return { deleted };
    },
  };
}

export type MaintenanceActivities = ReturnType<typeof createMaintenanceActivities>;
