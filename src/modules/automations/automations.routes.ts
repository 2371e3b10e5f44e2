/**
 * GET /automations, GET/PATCH/DELETE /automations/{id}. Automations are created by operators
 * (`herald admin automation create`); the API cannot create them or edit their trigger and
 * steps. Responses are snake_case (spec). DELETE archives and answers the delete envelope
 * `{_id, deleted: true, archived: true}`, also for an automation already archived.
 */
import type { CursorCodec } from '../../http/cursor.ts';
import { listResult } from '../../http/paging.ts';
import { KIB } from '../../http/body-limits.ts';
import { defineRoute } from '../../http/route.ts';
import { IdParams, PageQuery } from '../../http/schemas.ts';
import { ArchiveAutomationResult, AutomationResponse, UpdateAutomationBody } from './automations.schemas.ts';
import { serializeArchivedAutomation, serializeAutomation } from './automations.serializer.ts';
import type { AutomationsService } from './automations.service.ts';

const LIST = 'automations';

const TRANSITIONS_NOTE =
  '`status` moves the automation to the given state, from any of the four (draft, active, paused, archived). ' +
  'Setting the current status again changes nothing. `version` increases by one on every change.';

/** The automation routes, built on the automations service. */
export function createAutomationsRoutes(deps: { automations: AutomationsService; cursors: CursorCodec }) {
  return [
    defineRoute({
      operationId: 'listAutomations',
      method: 'GET',
      path: '/automations',
      summary: 'List automations, newest first',
      tag: 'Automations',
      scope: 'automations:read',
      query: PageQuery,
      response: { status: 200, description: 'A page of automations', schema: AutomationResponse, list: true },
      handle: ({ caller, query }) =>
        listResult(
          { cursors: deps.cursors, list: LIST, caller, query },
          (page) => deps.automations.listAutomations(caller.orgId, page),
          serializeAutomation,
        ),
    }),
    defineRoute({
      operationId: 'getAutomation',
      method: 'GET',
      path: '/automations/:id',
      summary: 'Retrieve an automation',
      tag: 'Automations',
      scope: 'automations:read',
      params: IdParams,
      response: { status: 200, description: 'The automation', schema: AutomationResponse },
      errors: ['invalid_request', 'not_found'],
      async handle({ caller, params }) {
        return { status: 200, data: serializeAutomation(await deps.automations.getAutomation(caller.orgId, params.id)) };
      },
    }),
    defineRoute({
      operationId: 'updateAutomation',
      method: 'PATCH',
      path: '/automations/:id',
      summary: 'Rename, describe or change the status of an automation',
      description: TRANSITIONS_NOTE,
      tag: 'Automations',
      scope: 'automations:write',
      params: IdParams,
      body: UpdateAutomationBody,
      // name 120 + description 2000 characters, even \u-escaped (6 bytes each): under 13 KB.
      bodyLimit: 16 * KIB,
      response: { status: 200, description: 'The automation', schema: AutomationResponse },
      errors: ['invalid_request', 'not_found', 'idempotency_conflict'],
      async handle({ caller, params, body }) {
        const automation = await deps.automations.updateAutomation(caller.orgId, params.id, body);
        return { status: 200, data: serializeAutomation(automation) };
      },
    }),
    defineRoute({
      operationId: 'deleteAutomation',
      method: 'DELETE',
      path: '/automations/:id',
      summary: 'Delete (archive) an automation',
      description:
        'Archives the automation; it stays readable with status archived. Deleting an archived automation again answers the same envelope.',
      tag: 'Automations',
      scope: 'automations:write',
      params: IdParams,
      response: { status: 200, description: 'The delete envelope', schema: ArchiveAutomationResult },
      errors: ['invalid_request', 'not_found', 'idempotency_conflict'],
      async handle({ caller, params }) {
        const automation = await deps.automations.archiveAutomation(caller.orgId, params.id);
        return { status: 200, data: serializeArchivedAutomation(automation) };
      },
    }),
  ];
}
