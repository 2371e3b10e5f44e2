import type { MikroORM } from '@mikro-orm/postgresql';
import { Domain } from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import type { EgressSettings } from '../../settings/egress-pools.ts';

/**
 * The egress pool a workspace's domain sends from (the domain's `ip_pool`). Pools are the
 * operator's (EGRESS_POOLS); a workspace picks one of them by name, or none (null) for the
 * default. The worker reads the choice within seconds (src/modules/egress/egress.ts).
 */
export function createDomainPoolService(deps: { orm: MikroORM; egress: Pick<EgressSettings, 'pools'> }) {
  return {
    /** The names a domain may pick, in the order the operator listed them. */
    poolNames(): string[] {
      return Object.keys(deps.egress.pools);
    },

    /**
     * Sets the domain's pool (null: none). 404 for another workspace's domain; 400
     * invalid_request (field `ip_pool`, reason UNKNOWN_IP_POOL) for a pool the operator has not defined.
     */
    async setDomainPool(orgId: string, domainId: string, pool: string | null): Promise<Domain> {
      if (pool !== null && !deps.egress.pools[pool]) {
        const known = Object.keys(deps.egress.pools);
        const message = `no egress IP pool "${pool}" on this server (${known.length > 0 ? `pools: ${known.join(', ')}` : 'none are configured'})`;
        throw new AppError('invalid_request', `Invalid body.ip_pool: ${message}.`, {
          reason: 'UNKNOWN_IP_POOL',
          fields: [{ path: 'ip_pool', location: 'body', type: 'ip_pool', message }],
        });
      }
      const em = scopeToOrg(deps.orm.em, orgId);
      const domain = await em.findOne(Domain, { id: domainId });
      if (!domain) throw new AppError('not_found', `domain ${domainId} does not exist`);
      domain.ipPool = pool;
      await em.flush();
      return domain;
    },
  };
}

export type DomainPoolService = ReturnType<typeof createDomainPoolService>;
