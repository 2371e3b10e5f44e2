import { defineRoute } from '../../http/route.ts';
import { IdParams } from '../../http/schemas.ts';
import type { CursorCodec } from '../../http/cursor.ts';
import { filteredList, listResult } from '../../http/paging.ts';
import { ListEmailsQuery, TransactionalEmailResponse } from './sends.schemas.ts';
import { serializeEmail, serializeEmailEvent } from './sends.serializer.ts';
import type { SendsService } from './sends.service.ts';

/** GET /outbox/emails/{id}, GET /outbox/emails (the email log) and POST /outbox/emails/{id}/cancel (Herald extensions). */
export function emailRecordRoutes(deps: {
  sends: Pick<SendsService, 'getEmailWithEvents' | 'listEmails' | 'cancelEmail'>;
  cursors: CursorCodec;
}) {
  return [
    defineRoute({
      operationId: 'getEmail',
      method: 'GET',
      path: '/outbox/emails/:id',
      summary: 'Get a transactional email with per-recipient outcomes',
      tag: 'Outbox',
      scope: 'outbox.transactional:send',
      extension: true,
      params: IdParams,
      errors: ['not_found'],
      response: { status: 200, description: 'The transactional email record', schema: TransactionalEmailResponse },
      handle: async ({ caller, params }) => {
        const { email, recipients, events } = await deps.sends.getEmailWithEvents(caller.orgId, params.id);
        return { status: 200, data: { ...serializeEmail(email, recipients), events: events.map(serializeEmailEvent) } };
      },
    }),
    defineRoute({
      operationId: 'listEmails',
      method: 'GET',
      path: '/outbox/emails',
      summary: 'List transactional emails (the email log), newest first',
      description:
        'Filters, combined with AND: `status`, `to` (a recipient address, any of to/cc/bcc), `from` (a sender address, or a sending domain), `tag`, `template_id`, `created_after` (inclusive), `created_before` (exclusive). Each email carries its per-recipient outcomes; GET /outbox/emails/{id} adds its events.',
      tag: 'Outbox',
      scope: 'outbox.transactional:send',
      extension: true,
      query: ListEmailsQuery,
      response: { status: 200, description: 'A page of transactional emails', schema: TransactionalEmailResponse, list: true },
      handle: ({ caller, query }) => {
        const { list, filters } = filteredList('emails', query);
        return listResult(
          { cursors: deps.cursors, list, caller, query },
          (page) => deps.sends.listEmails(caller.orgId, page, filters),
          (email, page) => serializeEmail(email, page.recipients.get(email.id) ?? []),
        );
      },
    }),
    defineRoute({
      operationId: 'cancelEmail',
      method: 'POST',
      path: '/outbox/emails/:id/cancel',
      summary: 'Cancel a scheduled send',
      description:
        'Only before sending starts: 409 conflict (details.reason EMAIL_NOT_CANCELLABLE) once it is sending, sent, failed or cancelled. Credits and the warm-up count are given back.',
      tag: 'Outbox',
      scope: 'outbox.transactional:send',
      extension: true,
      params: IdParams,
      errors: ['not_found', 'conflict'],
      response: { status: 200, description: 'The cancelled email', schema: TransactionalEmailResponse },
      handle: async ({ caller, params }) => {
        const { email, recipients } = await deps.sends.cancelEmail(caller.orgId, params.id);
        return { status: 200, data: serializeEmail(email, recipients) };
      },
    }),
  ];
}
