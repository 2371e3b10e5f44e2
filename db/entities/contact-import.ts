import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn, updatedAtColumn } from './columns.ts';

/**
 * awaiting_upload → validating → importing → completed, or failed (the file was refused as a
 * whole, or the upload URL lapsed unused): see docs/contacts-import.md.
 */
export const CONTACT_IMPORT_STATUSES = ['awaiting_upload', 'validating', 'importing', 'completed', 'failed'] as const;
export type ContactImportStatus = (typeof CONTACT_IMPORT_STATUSES)[number];

/** Why a whole file was refused (nothing of it imported). */
export interface ContactImportFailure {
  reason: string;
  message: string;
  /** The file line the problem was found on, when it has one. */
  line: number | null;
}

/**
 * A CSV import of contacts (POST /api/v1/contacts/imports, then a signed PUT of the file). The
 * file is a blob; the import workflow validates it whole, then upserts its rows in batches,
 * each batch committed with the checkpoint after it (`byteOffset`, `linesDone`, `rowsDone`),
 * so a retried activity resumes where the last commit left off and counts nothing twice.
 */
export const ContactImportSchema = defineEntity({
  name: 'ContactImport',
  tableName: 'contact_imports',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    status: p.enum(CONTACT_IMPORT_STATUSES).default('awaiting_upload'),
    filename: p.string().length(255).nullable(),
    /** A static segment every imported contact is added to (null: none). */
    segmentId: p.string().length(24).nullable(),
    blobKey: p.string().length(200).nullable(),
    sizeBytes: p.bigint('number').nullable(),
    sha256: p.string().length(64).nullable(),
    /** The header's column names as written in the file (the import maps them). */
    columns: p.array().nullable(),
    /** Data rows in the file (the header excluded), counted by validation. */
    totalRows: p.integer().nullable(),
    rowsDone: p.integer().default(0),
    created: p.integer().default(0),
    updated: p.integer().default(0),
    unchanged: p.integer().default(0),
    skipped: p.integer().default(0),
    /** Contacts that joined `segmentId` through this import. */
    addedToSegment: p.integer().default(0),
    /** The file offset after the last committed row, and the file lines before it. */
    byteOffset: p.bigint('number').default(0),
    linesDone: p.integer().default(0),
    failure: p.json<ContactImportFailure>().nullable(),
    uploadExpiresAt: p.datetime(),
    uploadedAt: p.datetime().nullable(),
    completedAt: p.datetime().nullable(),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
  indexes: [{ properties: ['orgId', 'createdAt', 'id'] }],
});

export class ContactImport extends ContactImportSchema.class {}
ContactImportSchema.setClass(ContactImport);

/** One skipped row of an import: the error report, in row order. */
export const ContactImportErrorSchema = defineEntity({
  name: 'ContactImportError',
  tableName: 'contact_import_errors',
  properties: {
    importId: p.string().length(24).primary(),
    /** 1-based data row (the header is row 0). */
    row: p.integer().primary(),
    orgId: orgIdColumn(),
    /** The file line the row starts on (1-based; quoted fields may span lines). */
    line: p.integer(),
    email: p.string().length(320).default(''),
    reason: p.string().length(40),
    message: p.string().length(500),
  },
});

export class ContactImportError extends ContactImportErrorSchema.class {}
ContactImportErrorSchema.setClass(ContactImportError);

/**
 * A contact an import's rows named, and what the import did to it (`created`, `updated` or
 * `unchanged`): the contact's timeline lists the imports that touched it. One row per contact
 * and import, written with each batch; read by the contact's id (the primary key leads with it),
 * deleted with its import by retention.
 */
export const ContactImportMemberSchema = defineEntity({
  name: 'ContactImportMember',
  tableName: 'contact_import_members',
  properties: {
    contactId: p.string().length(24).primary(),
    importId: p.string().length(24).primary(),
    orgId: orgIdColumn({ indexed: false }),
    outcome: p.string().length(16),
    createdAt: p.datetime(),
  },
  // Retention deletes an import's rows with the import.
  indexes: [{ properties: ['importId'] }],
});

export class ContactImportMember extends ContactImportMemberSchema.class {}
ContactImportMemberSchema.setClass(ContactImportMember);
