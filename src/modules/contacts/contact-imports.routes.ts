import * as v from 'valibot';
import { CONTACT_IMPORT_STATUSES } from '../../../db/entities/index.ts';
import type { CursorCodec } from '../../http/cursor.ts';
import { listResult } from '../../http/paging.ts';
import { csvDownload } from '../../http/csv-download.ts';
import { defineRoute } from '../../http/route.ts';
import { IdParams, IdSchema, PageQuery, Timestamp } from '../../http/schemas.ts';
import { CsvDownloadQuery, csvOptionsOf } from './contacts.schemas.ts';
import { AppError } from '../../errors.ts';
import { IMPORT_LIMITS } from './contact-import.fns.ts';
import { IMPORT_REPORT_COLUMNS, type ContactImportsService } from './contact-imports.service.ts';
import { serializeContactImport } from './contact-imports.serializer.ts';

const Count = v.pipe(v.number(), v.integer());

const ContactImportResponse = v.object({
  _id: v.string(),
  status: v.picklist(CONTACT_IMPORT_STATUSES),
  filename: v.nullable(v.string()),
  size_bytes: v.nullable(Count),
  total_rows: v.pipe(v.nullable(Count), v.description('Data rows in the file (the header excluded), once validated.')),
  rows_processed: Count,
  created: Count,
  updated: Count,
  unchanged: Count,
  skipped: v.pipe(Count, v.description('Rows skipped, each listed in the error report (errors_url).')),
  segment_id: v.nullable(v.string()),
  added_to_segment: v.pipe(Count, v.description('Contacts that joined segment_id through this import.')),
  failure: v.nullable(v.object({ reason: v.string(), message: v.string(), line: v.nullable(Count) })),
  errors_url: v.string(),
  upload_expires_at: Timestamp,
  uploaded_at: v.nullable(Timestamp),
  completed_at: v.nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
});

const CreatedImportResponse = v.object({
  ...ContactImportResponse.entries,
  upload_url: v.pipe(v.string(), v.description('PUT the CSV file here (any Content-Type but multipart; chunked is fine) within an hour.')),
});

const CreateImportBody = v.strictObject({
  segment_id: v.optional(
    v.pipe(IdSchema, v.description('A static segment every imported contact is added to (needs segments:write too).')),
  ),
  filename: v.optional(
    v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(255, 'must be at most 255 characters')),
  ),
});

const LIST = 'contact-imports';

/**
 * POST/GET /contacts/imports, GET /contacts/imports/{id} and its error report (Herald
 * extensions; docs/contacts-import.md). Mounted before /contacts/{id}.
 */
export function createContactImportsRoutes(deps: { imports: ContactImportsService; cursors: CursorCodec }) {
  return [
    defineRoute({
      operationId: 'createContactImport',
      method: 'POST',
      path: '/contacts/imports',
      summary: 'Start a CSV import of contacts',
      description:
        'Records an import awaiting its file and answers with a signed `upload_url`: PUT the CSV there (UTF-8, a header line with an ' +
        `\`email\` column; at most ${IMPORT_LIMITS.maxRows} rows and ${IMPORT_LIMITS.maxBytes} bytes). The file is validated whole, then ` +
        'imported in the background: rows merge into existing contacts by email (a non-empty cell wins, tags and custom fields are ' +
        'added, a status only moves away from active), bad rows are skipped and listed in the error report. With `segment_id` (a static ' +
        'segment; the key needs segments:write too) every imported contact is also added to that segment. Poll GET /contacts/imports/{id}.',
      tag: 'Contacts',
      scope: 'contacts:write',
      extension: true,
      body: CreateImportBody,
      response: { status: 201, description: 'The import, awaiting its file', schema: CreatedImportResponse },
      errors: ['invalid_request', 'not_found', 'conflict', 'idempotency_conflict', 'service_unavailable'],
      async handle({ caller, body }) {
        if (body.segment_id && !caller.scopes.includes('segments:write')) {
          throw new AppError('missing_scope', 'Importing into a segment also requires the segments:write scope.', {
            required_scope: 'segments:write',
          });
        }
        const { contactImport, uploadUrl } = await deps.imports.createImport(caller.orgId, {
          filename: body.filename,
          segmentId: body.segment_id,
        });
        return { status: 201, data: { ...serializeContactImport(contactImport), upload_url: uploadUrl } };
      },
    }),
    defineRoute({
      operationId: 'listContactImports',
      method: 'GET',
      path: '/contacts/imports',
      summary: 'List contact imports, newest first',
      tag: 'Contacts',
      scope: 'contacts:read',
      extension: true,
      query: PageQuery,
      response: { status: 200, description: 'A page of imports', schema: ContactImportResponse, list: true },
      handle: ({ caller, query }) =>
        listResult(
          { cursors: deps.cursors, list: LIST, caller, query },
          (page) => deps.imports.listImports(caller.orgId, page),
          (item) => serializeContactImport(item),
        ),
    }),
    defineRoute({
      operationId: 'getContactImport',
      method: 'GET',
      path: '/contacts/imports/:id',
      summary: 'Retrieve a contact import: status, progress and counts',
      tag: 'Contacts',
      scope: 'contacts:read',
      extension: true,
      params: IdParams,
      response: { status: 200, description: 'The import', schema: ContactImportResponse },
      errors: ['invalid_request', 'not_found'],
      async handle({ caller, params }) {
        return { status: 200, data: serializeContactImport(await deps.imports.getImport(caller.orgId, params.id)) };
      },
    }),
    defineRoute({
      operationId: 'getContactImportErrors',
      method: 'GET',
      path: '/contacts/imports/:id/errors',
      summary: 'The error report of a contact import (CSV)',
      description: `Every skipped row, in file order, as CSV with a header line: ${IMPORT_REPORT_COLUMNS.join(', ')}. \`row\` counts data rows from 1; \`line\` is the file line the row starts on. Cells a spreadsheet would read as a formula get a leading ' unless \`escape_formulas=false\`.`,
      tag: 'Contacts',
      scope: 'contacts:read',
      extension: true,
      params: IdParams,
      query: CsvDownloadQuery,
      response: {
        status: 200,
        description: 'The report',
        binary: {
          contentType: 'text/csv; charset=utf-8',
          headers: { 'Content-Disposition': 'attachment; filename="contact-import-<id>-errors.csv"' },
        },
      },
      errors: ['invalid_request', 'not_found'],
      async handle({ caller, params, query }) {
        const stream = await deps.imports.errorReport(caller.orgId, params.id, csvOptionsOf(query));
        return csvDownload(stream, `contact-import-${params.id}-errors.csv`);
      },
    }),
  ];
}
