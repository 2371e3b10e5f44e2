import * as v from 'valibot';
import { IdParams } from '../../http/schemas.ts';
import { defineRoute } from '../../http/route.ts';
import { POOL_NAME } from '../../settings/egress-pools.ts';
import type { DomainPoolService } from './domain-pool.service.ts';

const DomainPoolBody = v.strictObject({
  ip_pool: v.nullable(v.pipe(v.string(), v.regex(POOL_NAME, 'must be a pool name (lower-case letters, digits, - and _)'))),
});

const DomainPoolResponse = v.object({ _id: v.string(), domain: v.string(), ip_pool: v.nullable(v.string()) });

/**
 * PATCH /domains/:id (Herald extension, docs/deliverability.md "Egress IP pools"): picks the
 * egress IP pool the domain's mail leaves from, by one of the names the operator configured
 * (EGRESS_POOLS), or none with `null`. An unknown pool is 400 invalid_request (UNKNOWN_IP_POOL).
 */
export function createDomainPoolRoutes(deps: { pools: DomainPoolService }) {
  return [
    defineRoute({
      operationId: 'updateDomain',
      method: 'PATCH',
      path: '/domains/:id',
      summary: "Pick the domain's egress IP pool (Herald extension)",
      description:
        "`ip_pool`: a pool the server's operator configured (EGRESS_POOLS), or null for the default. 400 invalid_request " +
        'with details.reason UNKNOWN_IP_POOL for a pool the server does not have.',
      tag: 'Domains',
      scope: 'domains:write',
      extension: true,
      params: IdParams,
      body: DomainPoolBody,
      response: { status: 200, description: 'The domain and its pool', schema: DomainPoolResponse },
      errors: ['invalid_request', 'not_found', 'idempotency_conflict', 'conflict'],
      async handle({ caller, params, body }) {
        const domain = await deps.pools.setDomainPool(caller.orgId, params.id, body.ip_pool);
        return { status: 200, data: { _id: domain.id, domain: domain.domain, ip_pool: domain.ipPool ?? null } };
      },
    }),
  ];
}
