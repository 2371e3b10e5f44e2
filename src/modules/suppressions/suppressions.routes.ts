/**
 * The suppression list (Herald extension): GET /suppressions, POST /suppressions,
 * DELETE /suppressions/{email}, and its audit trail GET /suppressions/changes. Scopes: the
 * catalog has none for suppressions; they are about who a workspace may write to, so reading
 * takes contacts:read and changing contacts:write (docs/decisions.md).
 */
import type { CursorCodec } from '../../http/cursor.ts';
import { filteredList, listResult } from '../../http/paging.ts';
import { defineRoute } from '../../http/route.ts';
import { PageQuery } from '../../http/schemas.ts';
import {
  AddSuppressionBody,
  ListSuppressionsQuery,
  RemovedSuppressionResponse,
  RemoveSuppressionQuery,
  SuppressionChangeResponse,
  SuppressionParams,
  SuppressionResponse,
} from './suppressions.schemas.ts';
import { serializeSuppression, serializeSuppressionChange } from './suppressions.serializer.ts';
import type { SuppressionsService } from './suppressions.service.ts';

const REASONS_NOTE =
  '`reason`: `bounce` (a hard bounce), `complaint` (a spam report), `unsubscribe`, `manual` (added through the API). ' +
  '`stream`: the message stream the entry keeps mail from, null for every stream (bounces and complaints hold for every stream; ' +
  'an unsubscribe only for the stream of the message it came from). ' +
  "POST /outbox/emails and SMTP submission refuse an address listed for the send's stream with 403 RECIPIENT_SUPPRESSED.";

export function createSuppressionsRoutes(deps: { suppressions: SuppressionsService; cursors: CursorCodec }) {
  return [
    defineRoute({
      operationId: 'listSuppressions',
      method: 'GET',
      path: '/suppressions',
      summary: 'List the suppression list, newest first',
      description: `${REASONS_NOTE} Filters: \`reason\`, \`email\` (exact), \`stream\` (a stream name, or \`all\` for the entries of every stream).`,
      tag: 'Suppressions',
      scope: 'contacts:read',
      extension: true,
      query: ListSuppressionsQuery,
      response: { status: 200, description: 'A page of suppressed addresses', schema: SuppressionResponse, list: true },
      handle: ({ caller, query }) => {
        const { list, filters } = filteredList('suppressions', query);
        return listResult(
          { cursors: deps.cursors, list, caller, query },
          (page) => deps.suppressions.listSuppressions(caller.orgId, page, filters),
          serializeSuppression,
        );
      },
    }),
    defineRoute({
      operationId: 'addSuppression',
      method: 'POST',
      path: '/suppressions',
      summary: 'Add an address to the suppression list',
      description: `Reason \`manual\`; with \`stream\`, for that stream only (422 UNKNOWN_STREAM for a stream the workspace does not have). 409 conflict (details.reason ALREADY_SUPPRESSED, suppression_reason) when it is already listed. ${REASONS_NOTE}`,
      tag: 'Suppressions',
      scope: 'contacts:write',
      extension: true,
      body: AddSuppressionBody,
      errors: ['invalid_request', 'conflict', 'unprocessable_entity', 'idempotency_conflict'],
      response: { status: 201, description: 'The suppression list entry', schema: SuppressionResponse },
      handle: async ({ caller, body }) => ({
        status: 201,
        data: serializeSuppression(await deps.suppressions.addSuppression(caller.orgId, caller.keyId, body)),
      }),
    }),
    defineRoute({
      operationId: 'removeSuppression',
      method: 'DELETE',
      path: '/suppressions/:email',
      summary: 'Lift a suppression',
      description:
        "Removes the address from the list, every entry of it or with `stream` (`all` or a stream name) the entry of that scope (404 when there is none), and records who did in the audit trail. When the entry for every stream goes, the workspace's contact with this address, when bounced, complained or suppressed, is moved back to active, so the address can be sent to again.",
      tag: 'Suppressions',
      scope: 'contacts:write',
      extension: true,
      params: SuppressionParams,
      query: RemoveSuppressionQuery,
      errors: ['not_found', 'idempotency_conflict'],
      response: { status: 200, description: 'The address was lifted', schema: RemovedSuppressionResponse },
      handle: async ({ caller, params, query }) => {
        const { contactReactivated } = await deps.suppressions.removeSuppression(caller.orgId, caller.keyId, params.email, query.stream);
        return { status: 200, data: { email: params.email, deleted: true, contact_reactivated: contactReactivated } };
      },
    }),
    defineRoute({
      operationId: 'listSuppressionChanges',
      method: 'GET',
      path: '/suppressions/changes',
      summary: "The suppression list's audit trail, newest first",
      description: 'Every address added (by a bounce, a complaint or a caller: `api_key_id`) or removed, with when and why.',
      tag: 'Suppressions',
      scope: 'contacts:read',
      extension: true,
      query: PageQuery,
      response: { status: 200, description: 'A page of changes', schema: SuppressionChangeResponse, list: true },
      handle: ({ caller, query }) =>
        listResult(
          { cursors: deps.cursors, list: 'suppression-changes', caller, query },
          (page) => deps.suppressions.listChanges(caller.orgId, page),
          serializeSuppressionChange,
        ),
    }),
  ];
}
