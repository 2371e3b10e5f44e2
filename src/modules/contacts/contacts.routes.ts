import type { CursorCodec } from '../../http/cursor.ts';
import { filteredList, listJsonResult } from '../../http/paging.ts';
import { csvDownload } from '../../http/csv-download.ts';
import { defineRoute } from '../../http/route.ts';
import { IdParams } from '../../http/schemas.ts';
import type { ContactsService } from './contacts.service.ts';
import {
  ContactResponse,
  csvOptionsOf,
  CreateContactBody,
  DeletedContactResponse,
  ExportContactsQuery,
  ListContactsQuery,
  UpdateContactBody,
} from './contacts.schemas.ts';
import { EXPORT_COLUMNS } from './contacts-export.ts';
import { serializeContact } from './contacts.serializer.ts';

const LIST = 'contacts';

/** GET/POST /contacts, GET /contacts/export (CSV) and GET/PATCH/DELETE /contacts/{id}. */
export function createContactsRoutes(deps: { contacts: ContactsService; cursors: CursorCodec }) {
  return [
    defineRoute({
      operationId: 'listContacts',
      method: 'GET',
      path: '/contacts',
      summary: 'List contacts, newest first',
      description:
        'Optional filters (Herald extensions), combined with and: `email` (exact, normalised), `status`, `search` (a prefix of the email, ' +
        'the full name or the last name, any case) and `tag` (contacts carrying it, exact). Each is read on an index led by the workspace.',
      tag: 'Contacts',
      scope: 'contacts:read',
      query: ListContactsQuery,
      response: { status: 200, description: 'A page of contacts', schema: ContactResponse, list: true },
      handle: ({ caller, query }) =>
        listJsonResult({ cursors: deps.cursors, list: filteredList(LIST, query).list, caller, query }, (page) =>
          deps.contacts.listContacts(caller.orgId, page, {
            email: query.email,
            status: query.status,
            prefix: query.search,
            tag: query.tag,
          }),
        ),
    }),
    defineRoute({
      operationId: 'createContact',
      method: 'POST',
      path: '/contacts',
      summary: 'Create a contact',
      tag: 'Contacts',
      scope: 'contacts:write',
      body: CreateContactBody,
      response: { status: 201, description: 'The contact', schema: ContactResponse },
      errors: ['invalid_request', 'conflict', 'idempotency_conflict', 'unprocessable_entity'],
      async handle({ caller, body }) {
        return { status: 201, data: serializeContact(await deps.contacts.createContact(caller.orgId, body)) };
      },
    }),
    defineRoute({
      // Before /contacts/:id, which would otherwise take `export` for an id.
      operationId: 'exportContacts',
      method: 'GET',
      path: '/contacts/export',
      summary: 'Export contacts as CSV',
      description:
        `Every contact of the workspace, or of \`segment_id\` (any segment type), optionally of one \`status\`, oldest first, as CSV ` +
        `(RFC 4180, UTF-8, a header line): ${EXPORT_COLUMNS.join(', ')}. \`tags\` and \`custom_fields\` are JSON (empty when none). ` +
        'The file is streamed as it is read: a very large export starts at once and holds little memory on either side. 404 for an unknown segment. ' +
        "Cells a spreadsheet would read as a formula (starting with = + - @, tab or carriage return) get a leading ' unless `escape_formulas=false`.",
      tag: 'Contacts',
      scope: 'contacts:read',
      extension: true,
      query: ExportContactsQuery,
      response: {
        status: 200,
        description: 'The CSV file',
        binary: {
          contentType: 'text/csv; charset=utf-8',
          headers: { 'Content-Disposition': 'attachment; filename="contacts-<date>.csv"' },
        },
      },
      errors: ['invalid_request', 'not_found'],
      async handle({ caller, query }) {
        const stream = await deps.contacts.exportContacts(
          caller.orgId,
          { status: query.status, segmentId: query.segment_id },
          csvOptionsOf(query),
        );
        return csvDownload(stream, `contacts-${new Date().toISOString().slice(0, 10)}.csv`);
      },
    }),
    defineRoute({
      operationId: 'getContact',
      method: 'GET',
      path: '/contacts/:id',
      summary: 'Retrieve a contact',
      tag: 'Contacts',
      scope: 'contacts:read',
      params: IdParams,
      response: { status: 200, description: 'The contact', schema: ContactResponse },
      errors: ['invalid_request', 'not_found'],
      async handle({ caller, params }) {
        return { status: 200, data: serializeContact(await deps.contacts.getContact(caller.orgId, params.id)) };
      },
    }),
    defineRoute({
      operationId: 'updateContact',
      method: 'PATCH',
      path: '/contacts/:id',
      summary: 'Update a contact (any field, including status)',
      tag: 'Contacts',
      scope: 'contacts:write',
      params: IdParams,
      body: UpdateContactBody,
      response: { status: 200, description: 'The updated contact', schema: ContactResponse },
      errors: ['invalid_request', 'not_found', 'conflict', 'unprocessable_entity'],
      async handle({ caller, params, body }) {
        return { status: 200, data: serializeContact(await deps.contacts.updateContact(caller.orgId, params.id, body)) };
      },
    }),
    defineRoute({
      operationId: 'deleteContact',
      method: 'DELETE',
      path: '/contacts/:id',
      summary: 'Delete a contact',
      tag: 'Contacts',
      scope: 'contacts:write',
      params: IdParams,
      response: { status: 200, description: 'The deleted contact id', schema: DeletedContactResponse },
      errors: ['invalid_request', 'not_found'],
      async handle({ caller, params }) {
        return { status: 200, data: await deps.contacts.deleteContact(caller.orgId, params.id) };
      },
    }),
  ];
}
