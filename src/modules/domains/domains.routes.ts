import * as v from 'valibot';
import { defineRoute } from '../../http/route.ts';
import type { RecordSettings } from './deliverability.fns.ts';
import { DomainOptionResponse } from './domains.schemas.ts';
import { serializeDomainOption } from './domains.serializer.ts';
import type { DomainsService } from './domains.service.ts';
import { WarmupResponse } from '../warmup/warmup.schemas.ts';
import type { WarmupService } from '../warmup/warmup.service.ts';

/** The spec's Domain option with Herald's `warmup` extension: what automatic warm-up allows today and why. */
const DomainWithWarmup = v.object({ ...DomainOptionResponse.entries, warmup: WarmupResponse });

/**
 * GET /domains: every domain of the workspace (verified or not, the `verified` flag tells),
 * default first then by name, each with the DNS records to publish, what the last check found,
 * its sender identities, and (extension) its automatic warm-up. Not paginated: the spec lists no query for it and a workspace has
 * few domains.
 */
export function createDomainsRoutes(deps: { domains: DomainsService; warmup: WarmupService; settings: RecordSettings }) {
  return [
    defineRoute({
      operationId: 'listDomains',
      method: 'GET',
      path: '/domains',
      summary: 'List sending domains with their DNS records and sender identities',
      tag: 'Domains',
      scope: 'domains:read',
      response: { status: 200, description: 'Every domain of the workspace', schema: v.array(DomainWithWarmup) },
      async handle({ caller }) {
        const rows = await deps.domains.listWorkspaceDomains(caller.orgId);
        const warmups = await deps.warmup.describe(
          caller.orgId,
          rows.map((row) => row.domain),
        );
        return {
          status: 200,
          data: rows.map(({ domain, senders }) => ({
            ...serializeDomainOption(domain, senders, deps.settings),
            warmup: warmups.get(domain.id),
          })),
        };
      },
    }),
  ];
}
