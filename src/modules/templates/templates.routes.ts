/**
 * GET/POST /templates and GET/PATCH/DELETE /templates/{id}. Responses are the spec's Template
 * (snake_case). Lists and GET include templates shared with the workspace; PATCH on one of them
 * is 403 (reason TEMPLATE_SHARED_READ_ONLY) and DELETE hides it for the workspace only, which
 * the delete envelope tells by `hidden: true`.
 */
import type { CursorCodec } from '../../http/cursor.ts';
import { listResult } from '../../http/paging.ts';
import { defineRoute } from '../../http/route.ts';
import { IdParams, PageQuery } from '../../http/schemas.ts';
import type { TemplatesService } from './templates.service.ts';
import { CreateTemplateBody, TemplateDeleteResponse, TemplateResponse, UpdateTemplateBody } from './templates.schemas.ts';
import { serializeTemplate, serializeTemplateDeletion } from './templates.serializer.ts';

const LIST = 'templates';

/** The five template operations, built on the templates service. */
export function createTemplatesRoutes(deps: { templates: TemplatesService; cursors: CursorCodec }) {
  return [
    defineRoute({
      operationId: 'listTemplates',
      method: 'GET',
      path: '/templates',
      summary: 'List templates, newest first',
      description: "The workspace's own templates and those shared with it (unless it hid them), in one list.",
      tag: 'Templates',
      scope: 'templates:read',
      query: PageQuery,
      response: { status: 200, description: 'A page of templates', schema: TemplateResponse, list: true },
      handle: ({ caller, query }) =>
        listResult(
          { cursors: deps.cursors, list: LIST, caller, query },
          (page) => deps.templates.listTemplates(caller.orgId, page),
          serializeTemplate,
        ),
    }),
    defineRoute({
      operationId: 'createTemplate',
      method: 'POST',
      path: '/templates',
      summary: 'Create a template',
      description: 'Created as a draft at version 1.',
      tag: 'Templates',
      scope: 'templates:write',
      body: CreateTemplateBody,
      response: { status: 201, description: 'The template', schema: TemplateResponse },
      errors: ['invalid_request', 'idempotency_conflict', 'conflict'],
      async handle({ caller, body }) {
        return { status: 201, data: serializeTemplate(await deps.templates.createTemplate(caller.orgId, body)) };
      },
    }),
    defineRoute({
      operationId: 'getTemplate',
      method: 'GET',
      path: '/templates/:id',
      summary: 'Retrieve a template',
      tag: 'Templates',
      scope: 'templates:read',
      params: IdParams,
      response: { status: 200, description: 'The template', schema: TemplateResponse },
      errors: ['invalid_request', 'not_found'],
      async handle({ caller, params }) {
        return { status: 200, data: serializeTemplate(await deps.templates.getTemplate(caller.orgId, params.id)) };
      },
    }),
    defineRoute({
      operationId: 'updateTemplate',
      method: 'PATCH',
      path: '/templates/:id',
      summary: 'Update a template',
      description:
        'Fields left out keep their values; `folder_id: null` clears the folder. `version` goes up by one when a value ' +
        'changes; a request that changes nothing leaves the template as it was. Any status may follow any other. ' +
        'A template shared with the workspace is read-only: 403 forbidden, details.reason TEMPLATE_SHARED_READ_ONLY.',
      tag: 'Templates',
      scope: 'templates:write',
      params: IdParams,
      body: UpdateTemplateBody,
      response: { status: 200, description: 'The template', schema: TemplateResponse },
      errors: ['invalid_request', 'forbidden', 'not_found', 'idempotency_conflict', 'conflict'],
      async handle({ caller, params, body }) {
        return { status: 200, data: serializeTemplate(await deps.templates.updateTemplate(caller.orgId, params.id, body)) };
      },
    }),
    defineRoute({
      operationId: 'deleteTemplate',
      method: 'DELETE',
      path: '/templates/:id',
      summary: 'Delete a template, or hide a shared one',
      description:
        "The owner's delete removes the template and its shares (`hidden: false`). On a template shared with the " +
        'workspace it hides the template for this workspace only (`hidden: true`); the owner keeps it.',
      tag: 'Templates',
      scope: 'templates:write',
      params: IdParams,
      response: { status: 200, description: 'The delete envelope', schema: TemplateDeleteResponse },
      errors: ['invalid_request', 'not_found', 'idempotency_conflict', 'conflict'],
      async handle({ caller, params }) {
        return { status: 200, data: serializeTemplateDeletion(await deps.templates.deleteTemplate(caller.orgId, params.id)) };
      },
    }),
  ];
}
