/**
 * GET /automations, GET/PATCH/DELETE /automations/{id}, and the run history (Herald
 * extensions): GET /automations/{id}/runs, /runs/{runId} and /definition. Automations are
 * created by operators and the dashboard (automation-authoring.ts); the API cannot create them
 * or edit their trigger and steps. Responses are snake_case (spec). DELETE archives and answers
 * the delete envelope `{_id, deleted: true, archived: true}`, also for an automation already
 * archived.
 */
import type { CursorCodec } from '../../http/cursor.ts';
import { filteredList, listResult } from '../../http/paging.ts';
import { KIB } from '../../http/body-limits.ts';
import { defineRoute } from '../../http/route.ts';
import { IdParams, PageQuery } from '../../http/schemas.ts';
import type { AutomationHistory } from './automation-history.service.ts';
import {
  ArchiveAutomationResult,
  AutomationResponse,
  AutomationRunResponse,
  AutomationRunWithTimelineResponse,
  ListRunsQuery,
  PublishedDefinitionResponse,
  RunParams,
  UpdateAutomationBody,
} from './automations.schemas.ts';
import { serializeArchivedAutomation, serializeAutomation, serializeRun, serializeRunStep } from './automations.serializer.ts';
import type { AutomationsService } from './automations.service.ts';

const LIST = 'automations';

const TRANSITIONS_NOTE =
  '`status` moves the automation to the given state, from any of the four (draft, active, paused, archived). ' +
  'Setting the current status again changes nothing. `version` increases by one on every change. ' +
  '`archived` ends every run in progress (status `exited`, `exit_reason` `archived`); `paused` holds runs where they are ' +
  'and `active` lets them go on. Activating an automation without a ' +
  'published definition is allowed; it enrols nobody until one is published.';

/** The automation routes, built on the automations service and the run history. */
export function createAutomationsRoutes(deps: { automations: AutomationsService; history: AutomationHistory; cursors: CursorCodec }) {
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
          (automation, page) => serializeAutomation(automation, page.stats.get(automation.id)!),
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
        const { automation, stats } = await deps.automations.getAutomation(caller.orgId, params.id);
        return { status: 200, data: serializeAutomation(automation, stats) };
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
        const { automation, stats } = await deps.automations.updateAutomation(caller.orgId, params.id, body);
        return { status: 200, data: serializeAutomation(automation, stats) };
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
        const { automation } = await deps.automations.archiveAutomation(caller.orgId, params.id);
        return { status: 200, data: serializeArchivedAutomation(automation) };
      },
    }),
    defineRoute({
      operationId: 'listAutomationRuns',
      method: 'GET',
      path: '/automations/:id/runs',
      summary: "List an automation's runs, newest first",
      description:
        'One run per contact per entry. Filters, combined with AND: `status` (active, completed, failed, exited) and `contact_id`. ' +
        'GET /automations/{id}/runs/{runId} adds the timeline of one run.',
      tag: 'Automations',
      scope: 'automations:read',
      extension: true,
      params: IdParams,
      query: ListRunsQuery,
      response: { status: 200, description: 'A page of runs', schema: AutomationRunResponse, list: true },
      errors: ['invalid_request', 'not_found'],
      handle: ({ caller, params, query }) => {
        const { list, filters } = filteredList(`${LIST}:${params.id.toLowerCase()}:runs`, query);
        return listResult(
          { cursors: deps.cursors, list, caller, query },
          (page) => deps.history.listRuns(caller.orgId, params.id, page, filters),
          (run, page) => serializeRun(run, page.versions.get(run.definitionId) ?? 0),
        );
      },
    }),
    defineRoute({
      operationId: 'getAutomationRun',
      method: 'GET',
      path: '/automations/:id/runs/:runId',
      summary: 'Retrieve a run with its timeline',
      description: "`timeline`: the run's steps in the order it took them, each with what happened (`outcome`) and its `detail`.",
      tag: 'Automations',
      scope: 'automations:read',
      extension: true,
      params: RunParams,
      response: { status: 200, description: 'The run and its timeline', schema: AutomationRunWithTimelineResponse },
      errors: ['invalid_request', 'not_found'],
      async handle({ caller, params }) {
        const { run, version, timeline } = await deps.history.getRun(caller.orgId, params.id, params.runId);
        return { status: 200, data: { ...serializeRun(run, version), timeline: timeline.map(serializeRunStep) } };
      },
    }),
    defineRoute({
      operationId: 'getAutomationDefinition',
      method: 'GET',
      path: '/automations/:id/definition',
      summary: 'Retrieve the published definition of an automation',
      description:
        'The trigger, re-entry rule, goal and steps new runs start on, and its `version` (runs keep the version they started on). ' +
        '404 with details.reason DEFINITION_NOT_PUBLISHED while none is published. The format is in docs/automations.md.',
      tag: 'Automations',
      scope: 'automations:read',
      extension: true,
      params: IdParams,
      response: { status: 200, description: 'The published definition', schema: PublishedDefinitionResponse },
      errors: ['invalid_request', 'not_found'],
      async handle({ caller, params }) {
        return { status: 200, data: await deps.history.publishedDefinition(caller.orgId, params.id) };
      },
    }),
  ];
}
