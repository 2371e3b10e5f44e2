import * as v from 'valibot';
import { defineRoute } from '../../http/route.ts';
import { IdParams } from '../../http/schemas.ts';
import type { TrackingDomains } from './tracking-domains.service.ts';
import { serializeTrackingDomain } from './tracking-domains.serializer.ts';
import { TrackingDomainResponse } from './tracking.schemas.ts';

const SetTrackingHostBody = v.strictObject({
  host: v.nullable(v.pipe(v.string(), v.maxLength(253, 'must be at most 253 characters'))),
});

/**
 * A domain's custom tracking host (Herald extension): PATCH sets or removes it and checks its
 * CNAME at once; POST .../check checks again; GET reads it. Verified, the domain's open pixels
 * and tracked links use it; otherwise PUBLIC_URL.
 */
export function createTrackingDomainsRoutes(deps: { tracking: TrackingDomains }) {
  const show = (domain: Parameters<typeof serializeTrackingDomain>[0]) => serializeTrackingDomain(domain, deps.tracking.cnameTarget);
  const response = { status: 200, description: "The domain's tracking host and what its check found", schema: TrackingDomainResponse };
  return [
    defineRoute({
      operationId: 'setDomainTrackingHost',
      method: 'PATCH',
      path: '/domains/:id/tracking',
      summary: "Set or remove a domain's custom tracking host",
      description:
        'The host (a subdomain of the domain, e.g. track.example.com) must be a CNAME to `cname_target`; it is checked at once. ' +
        '`host: null` removes it.',
      tag: 'Domains',
      scope: 'domains:write',
      extension: true,
      params: IdParams,
      body: SetTrackingHostBody,
      response,
      errors: ['invalid_request', 'not_found', 'idempotency_conflict'],
      async handle({ caller, params, body }) {
        return { status: 200, data: show(await deps.tracking.setHost(caller.orgId, params.id, body.host)) };
      },
    }),
    defineRoute({
      operationId: 'checkDomainTrackingHost',
      method: 'POST',
      path: '/domains/:id/tracking/check',
      summary: "Check a domain's tracking host's CNAME again",
      tag: 'Domains',
      scope: 'domains:write',
      extension: true,
      params: IdParams,
      response,
      errors: ['not_found', 'idempotency_conflict'],
      async handle({ caller, params }) {
        return { status: 200, data: show(await deps.tracking.check(caller.orgId, params.id)) };
      },
    }),
  ];
}
