import * as v from 'valibot';
import { CONTACT_STATUSES, type ContactStatus } from '../../../db/entities/index.ts';
import { normalizeEmail } from './contacts.fns.ts';
import { isDisposableDomain } from './email-quality.ts';

/**
 * The pure rules of a CSV contact import (docs/contacts-import.md): which header columns mean
 * what, how one row becomes a contact or a skipped row with its reason, and how two rows for
 * the same email merge. The import runner streams the file through these.
 */

export const IMPORT_LIMITS = {
  /** Data rows per file (the header excluded). */
  maxRows: 1_000_000,
  /** Bytes per file. */
  maxBytes: 512 * 1024 * 1024,
  /** Characters per record (one row, all fields): a 10 MB line is refused, not buffered. */
  maxRecordChars: 64 * 1024,
  /** Columns per row. */
  maxColumns: 200,
  nameChars: 200,
  emailChars: 320,
  tags: 100,
  tagChars: 100,
  /** Bytes of one row's custom fields, as JSON. */
  customFieldsBytes: 16 * 1024,
} as const;

/** Header columns that are read as contact fields; `id`, `created_at`, `updated_at` (an export's) are ignored. */
type Field = 'email' | 'first_name' | 'last_name' | 'company' | 'tags' | 'status' | 'custom_fields';
const ALIASES: Record<string, Field | 'ignored'> = {
  email: 'email',
  email_address: 'email',
  e_mail: 'email',
  first_name: 'first_name',
  firstname: 'first_name',
  given_name: 'first_name',
  last_name: 'last_name',
  lastname: 'last_name',
  surname: 'last_name',
  family_name: 'last_name',
  company: 'company',
  organization: 'company',
  organisation: 'company',
  tags: 'tags',
  status: 'status',
  custom_fields: 'custom_fields',
  id: 'ignored',
  created_at: 'ignored',
  updated_at: 'ignored',
};

/** What each column of the file means: a contact field, a custom field named by its header, or nothing. */
export type ColumnRole = { kind: 'field'; field: Field } | { kind: 'custom'; key: string } | { kind: 'ignored' };

export interface HeaderMapping {
  roles: ColumnRole[];
  emailIndex: number;
}

/** A whole-file problem: the import stops before writing anything. */
export interface FileProblem {
  reason:
    | 'EMPTY_FILE'
    | 'MISSING_EMAIL_COLUMN'
    | 'DUPLICATE_COLUMN'
    | 'TOO_MANY_COLUMNS'
    | 'INVALID_ENCODING'
    | 'RECORD_TOO_LARGE'
    | 'MALFORMED_CSV'
    | 'TOO_MANY_ROWS'
    | 'SEGMENT_NOT_STATIC'
    | 'SEGMENT_FULL';
  message: string;
  line: number | null;
}

function normalizeHeader(name: string): string {
  return name
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');
}

/** Maps the header line; a file without an email column, or with a column twice, is refused whole. */
export function mapHeader(header: readonly string[]): { ok: true; mapping: HeaderMapping } | { ok: false; problem: FileProblem } {
  const refuse = (reason: FileProblem['reason'], message: string) => ({ ok: false as const, problem: { reason, message, line: 1 } });
  if (header.length > IMPORT_LIMITS.maxColumns) {
    return refuse('TOO_MANY_COLUMNS', `The header has ${header.length} columns; at most ${IMPORT_LIMITS.maxColumns} are read.`);
  }
  const seen = new Map<string, string>();
  const roles: ColumnRole[] = header.map((raw) => {
    const name = normalizeHeader(raw);
    if (name === '') return { kind: 'ignored' };
    const alias = ALIASES[name];
    if (alias === 'ignored') return { kind: 'ignored' };
    return alias ? { kind: 'field', field: alias } : { kind: 'custom', key: raw.trim() };
  });
  for (const [index, role] of roles.entries()) {
    if (role.kind === 'ignored') continue;
    const key = role.kind === 'field' ? role.field : `custom:${role.key}`;
    const earlier = seen.get(key);
    if (earlier !== undefined) {
      return refuse(
        'DUPLICATE_COLUMN',
        `The columns "${earlier}" and "${header[index]}" both mean ${role.kind === 'field' ? role.field : role.key}.`,
      );
    }
    seen.set(key, header[index] ?? '');
  }
  const emailIndex = roles.findIndex((role) => role.kind === 'field' && role.field === 'email');
  if (emailIndex < 0) {
    return refuse('MISSING_EMAIL_COLUMN', 'The first line must be a header with an "email" column (e.g. email,first_name,last_name).');
  }
  return { ok: true, mapping: { roles, emailIndex } };
}

/** A row read as a contact: empty cells are absent (an import never blanks a stored field). */
export interface ImportedContact {
  email: string;
  firstName: string;
  lastName: string;
  company: string;
  tags: string[];
  customFields: Record<string, unknown>;
  /** Empty when the row has no status. */
  status: ContactStatus | '';
}

export type RowReason =
  | 'COLUMN_COUNT'
  | 'MISSING_EMAIL'
  | 'INVALID_EMAIL'
  | 'DISPOSABLE_DOMAIN'
  | 'FIELD_TOO_LONG'
  | 'INVALID_TAGS'
  | 'INVALID_STATUS'
  | 'INVALID_CUSTOM_FIELDS';

export type RowOutcome = { ok: true; contact: ImportedContact } | { ok: false; reason: RowReason; message: string; email: string };

const EmailCheck = v.pipe(v.string(), v.email());

function parseTags(cell: string): string[] | string {
  let tags: unknown;
  if (cell.startsWith('[')) {
    try {
      tags = JSON.parse(cell);
    } catch {
      return 'tags must be a JSON array of strings or a list separated by commas or semicolons';
    }
    if (!Array.isArray(tags) || tags.some((tag) => typeof tag !== 'string')) return 'tags must be a JSON array of strings';
  } else {
    tags = cell.split(/[;,]/);
  }
  const list = [...new Set((tags as string[]).map((tag) => tag.trim()).filter((tag) => tag !== ''))];
  if (list.length > IMPORT_LIMITS.tags) return `at most ${IMPORT_LIMITS.tags} tags`;
  const long = list.find((tag) => tag.length > IMPORT_LIMITS.tagChars);
  if (long !== undefined) return `a tag is at most ${IMPORT_LIMITS.tagChars} characters`;
  return list;
}

/** Reads one data row; a row that cannot become a contact is skipped with its reason. */
export function readRow(record: readonly string[], mapping: HeaderMapping): RowOutcome {
  const rawEmail = (record[mapping.emailIndex] ?? '').trim();
  const skip = (reason: RowReason, message: string): RowOutcome => ({
    ok: false,
    reason,
    message,
    email: rawEmail.slice(0, IMPORT_LIMITS.emailChars),
  });
  if (record.length !== mapping.roles.length) {
    return skip('COLUMN_COUNT', `The row has ${record.length} fields; the header has ${mapping.roles.length}.`);
  }
  if (rawEmail === '') return skip('MISSING_EMAIL', 'The email cell is empty.');
  if (rawEmail.length > IMPORT_LIMITS.emailChars || !v.is(EmailCheck, rawEmail))
    return skip('INVALID_EMAIL', 'The email is not a valid address.');
  const email = normalizeEmail(rawEmail);
  const domain = email.slice(email.lastIndexOf('@') + 1);
  if (isDisposableDomain(domain)) return skip('DISPOSABLE_DOMAIN', `${domain} is a disposable email domain.`);

  const contact: ImportedContact = { email, firstName: '', lastName: '', company: '', tags: [], customFields: {}, status: '' };
  const extra: Record<string, string> = {};
  for (const [index, role] of mapping.roles.entries()) {
    const cell = (record[index] ?? '').trim();
    if (cell === '' || role.kind === 'ignored') continue;
    if (role.kind === 'custom') {
      extra[role.key] = cell;
      continue;
    }
    switch (role.field) {
      case 'email':
        break;
      case 'first_name':
      case 'last_name':
      case 'company': {
        if (cell.length > IMPORT_LIMITS.nameChars)
          return skip('FIELD_TOO_LONG', `${role.field} is at most ${IMPORT_LIMITS.nameChars} characters.`);
        const key = role.field === 'first_name' ? 'firstName' : role.field === 'last_name' ? 'lastName' : 'company';
        contact[key] = cell;
        break;
      }
      case 'tags': {
        const tags = parseTags(cell);
        if (typeof tags === 'string') return skip('INVALID_TAGS', `${tags[0]!.toUpperCase()}${tags.slice(1)}.`);
        contact.tags = tags;
        break;
      }
      case 'status': {
        const status = cell.toLowerCase();
        if (!(CONTACT_STATUSES as readonly string[]).includes(status))
          return skip('INVALID_STATUS', `status must be one of ${CONTACT_STATUSES.join(', ')}.`);
        contact.status = status as ContactStatus;
        break;
      }
      case 'custom_fields': {
        let parsed: unknown;
        try {
          parsed = JSON.parse(cell);
        } catch {
          parsed = undefined;
        }
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
          return skip('INVALID_CUSTOM_FIELDS', 'custom_fields must be a JSON object.');
        contact.customFields = { ...(parsed as Record<string, unknown>) };
        break;
      }
    }
  }
  contact.customFields = { ...contact.customFields, ...extra };
  if (Buffer.byteLength(JSON.stringify(contact.customFields)) > IMPORT_LIMITS.customFieldsBytes) {
    return skip('INVALID_CUSTOM_FIELDS', `The row's custom fields are over ${IMPORT_LIMITS.customFieldsBytes} bytes as JSON.`);
  }
  return { ok: true, contact };
}

/**
 * Two rows for one email, `later` read after `earlier`: a later non-empty cell wins, tags are
 * joined, custom fields merged key by key, and a status only moves away from active (an import
 * never re-activates an unsubscribed, bounced, complained or suppressed contact). The import
 * statement applies the same rule between the file and a stored contact.
 */
export function mergeImported(earlier: ImportedContact, later: ImportedContact): ImportedContact {
  return {
    email: earlier.email,
    firstName: later.firstName || earlier.firstName,
    lastName: later.lastName || earlier.lastName,
    company: later.company || earlier.company,
    tags: [...new Set([...earlier.tags, ...later.tags])].slice(0, IMPORT_LIMITS.tags),
    customFields: { ...earlier.customFields, ...later.customFields },
    status: earlier.status !== '' && earlier.status !== 'active' ? earlier.status : later.status || earlier.status,
  };
}
