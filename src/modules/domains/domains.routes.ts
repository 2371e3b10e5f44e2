import * as v from 'valibot';
import { defineRoute } from '../../http/route.ts';
import type { RecordSettings } from './deliverability.fns.ts';
import { DomainOptionResponse } from './domains.schemas.ts';
import { serializeDomainOption } from './domains.serializer.ts';
import type { DomainsService } from './domains.service.ts';

/**
 * GET /domains: every domain of the workspace (verified or not, the `verified` flag tells),
 * default first then by name, each with the DNS records to publish, what the last check found,
 * and its sender identities. Not paginated: the spec lists no query for it and a workspace has
 * few domains.
 */
export function createDomainsRoutes(deps: { domains: DomainsService; settings: RecordSettings }) {
  return [
    defineRoute({
      operationId: 'listDomains',
      method: 'GET',
      path: '/domains',
      summary: 'List sending domains with their DNS records and sender identities',
      tag: 'Domains',
      scope: 'domains:read',
      response: { status: 200, description: 'Every domain of the workspace', schema: v.array(DomainOptionResponse) },
      async handle({ caller }) {
        const rows = await deps.domains.listWorkspaceDomains(caller.orgId);
        return {
          status: 200,
          data: rows.map(({ domain, senders }) => serializeDomainOption(domain, senders, deps.settings)),
        };
      },
    }),
  ];
}
