/**
 * DMARC aggregate reports of a domain (Herald extension, docs/deliverability.md): the report
 * address to publish in the domain's DMARC record, the reports received there, and who sends as
 * the domain with which results. Reading takes domains:read; changing the report address
 * domains:write. Another workspace's domain is 404 not_found.
 */
import type { CursorCodec } from '../../http/cursor.ts';
import { filteredList, listResult } from '../../http/paging.ts';
import { defineRoute } from '../../http/route.ts';
import { PageQuery } from '../../http/schemas.ts';
import { DEFAULT_SOURCES_WINDOW_DAYS } from './dmarc.fns.ts';
import {
  DmarcDomainParams,
  DmarcReportResponse,
  DmarcSettingsResponse,
  DmarcSourceResponse,
  ListDmarcSourcesQuery,
  UpdateDmarcBody,
} from './dmarc.schemas.ts';
import { serializeDmarcReport, serializeDmarcSettings, serializeDmarcSource } from './dmarc.serializer.ts';
import type { DmarcService } from './dmarc.service.ts';

const ADDRESS_NOTE =
  "Receivers send aggregate reports to the address in the `rua` tag of the domain's `_dmarc` TXT record; Herald reads the ones that reach the report address (default `dmarc@<domain>`) of a verified domain through its inbound SMTP.";

export function createDmarcRoutes(deps: { dmarc: DmarcService; cursors: CursorCodec }) {
  return [
    defineRoute({
      operationId: 'getDomainDmarc',
      method: 'GET',
      path: '/domains/:id/dmarc',
      summary: "A domain's DMARC report address",
      description: `${ADDRESS_NOTE} \`rua\` is the tag to publish.`,
      tag: 'Domains',
      scope: 'domains:read',
      extension: true,
      params: DmarcDomainParams,
      errors: ['not_found'],
      response: { status: 200, description: 'The report address', schema: DmarcSettingsResponse },
      handle: async ({ caller, params }) => ({
        status: 200,
        data: serializeDmarcSettings(await deps.dmarc.getSettings(caller.orgId, params.id)),
      }),
    }),
    defineRoute({
      operationId: 'updateDomainDmarc',
      method: 'PATCH',
      path: '/domains/:id/dmarc',
      summary: "Change the local part of a domain's DMARC report address",
      description: `${ADDRESS_NOTE} Setting \`dmarc\` returns to the default. Publish the new \`rua\` afterwards: mail to the old address is then an ordinary inbox message.`,
      tag: 'Domains',
      scope: 'domains:write',
      extension: true,
      params: DmarcDomainParams,
      body: UpdateDmarcBody,
      errors: ['invalid_request', 'not_found', 'idempotency_conflict'],
      response: { status: 200, description: 'The report address', schema: DmarcSettingsResponse },
      handle: async ({ caller, params, body }) => ({
        status: 200,
        data: serializeDmarcSettings(await deps.dmarc.setLocalPart(caller.orgId, params.id, body.report_local_part)),
      }),
    }),
    defineRoute({
      operationId: 'listDmarcReports',
      method: 'GET',
      path: '/domains/:id/dmarc/reports',
      summary: 'List the DMARC aggregate reports a domain received, newest first',
      description: `${ADDRESS_NOTE} A report is stored once per reporting organisation and report id.`,
      tag: 'Domains',
      scope: 'domains:read',
      extension: true,
      params: DmarcDomainParams,
      query: PageQuery,
      errors: ['invalid_request', 'not_found'],
      response: { status: 200, description: 'A page of reports', schema: DmarcReportResponse, list: true },
      handle: ({ caller, params, query }) =>
        listResult(
          { cursors: deps.cursors, list: `dmarc-reports:${params.id}`, caller, query },
          (page) => deps.dmarc.listReports(caller.orgId, params.id, page),
          serializeDmarcReport,
        ),
    }),
    defineRoute({
      operationId: 'listDmarcSources',
      method: 'GET',
      path: '/domains/:id/dmarc/sources',
      summary: 'Who sends as a domain: messages and DMARC results per source address',
      description: `Sums of the records of the reports whose period ended at or after \`since\` (default ${DEFAULT_SOURCES_WINDOW_DAYS} days ago), per source IP address, ordered by address. \`dmarc_pass\`: DKIM or SPF passed aligned with the From domain; \`quarantined\`/\`rejected\`: the receivers' disposition.`,
      tag: 'Domains',
      scope: 'domains:read',
      extension: true,
      params: DmarcDomainParams,
      query: ListDmarcSourcesQuery,
      errors: ['invalid_request', 'not_found'],
      response: { status: 200, description: 'A page of source addresses', schema: DmarcSourceResponse, list: true },
      handle: ({ caller, params, query }) => {
        const { list } = filteredList(`dmarc-sources:${params.id}`, query);
        // Without `since`, the window's start is fixed by the first page and carried in the cursor.
        let since = query.since ? new Date(query.since) : new Date(Date.now() - DEFAULT_SOURCES_WINDOW_DAYS * 86_400_000);
        return listResult(
          { cursors: deps.cursors, list, caller, query, position: (source) => ({ sortValue: since, id: source.sourceIp }) },
          async (page) => {
            if (!query.since && page.after) since = page.after.sortValue;
            const sources = await deps.dmarc.listSources(caller.orgId, {
              domainId: params.id,
              since,
              limit: page.limit + 1,
              afterIp: page.after?.id,
              order: 'address',
            });
            return { items: sources.slice(0, page.limit), hasMore: sources.length > page.limit };
          },
          serializeDmarcSource,
        );
      },
    }),
  ];
}
