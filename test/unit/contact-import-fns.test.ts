import { describe, expect, it } from 'vitest';
import {
  IMPORT_LIMITS,
  mapHeader,
  mergeImported,
  readRow,
  type HeaderMapping,
  type ImportedContact,
} from '../../src/modules/contacts/contact-import.fns.ts';

function mapping(header: string[]): HeaderMapping {
  const mapped = mapHeader(header);
  if (!mapped.ok) throw new Error(mapped.problem.message);
  return mapped.mapping;
}

describe('contact import rules', () => {
  it('maps header names case- and space-insensitively, ignores export bookkeeping, keeps other columns as custom fields', () => {
    const m = mapping(['ID', 'E-mail', 'First Name', 'surname', 'Company', 'tags', 'status', 'custom_fields', 'created_at', 'Plan ', '']);
    expect(m.emailIndex).toBe(1);
    expect(m.roles.map((role) => (role.kind === 'field' ? role.field : role.kind === 'custom' ? `custom:${role.key}` : 'ignored'))).toEqual(
      ['ignored', 'email', 'first_name', 'last_name', 'company', 'tags', 'status', 'custom_fields', 'ignored', 'custom:Plan', 'ignored'],
    );
  });

  it('refuses a header without an email column, with a column twice, or with too many columns', () => {
    expect(mapHeader(['name', 'company'])).toMatchObject({ ok: false, problem: { reason: 'MISSING_EMAIL_COLUMN', line: 1 } });
    expect(mapHeader(['email', 'Email Address'])).toMatchObject({ ok: false, problem: { reason: 'DUPLICATE_COLUMN' } });
    expect(mapHeader(['email', 'Plan', 'plan '])).toMatchObject({ ok: true });
    expect(mapHeader(['email', 'Plan', 'Plan'])).toMatchObject({ ok: false, problem: { reason: 'DUPLICATE_COLUMN' } });
    const wide = ['email', ...Array.from({ length: IMPORT_LIMITS.maxColumns - 1 }, (_, i) => `c${i}`)];
    expect(mapHeader(wide).ok).toBe(true);
    expect(mapHeader([...wide, 'one more'])).toMatchObject({ ok: false, problem: { reason: 'TOO_MANY_COLUMNS' } });
  });

  const m = mapping(['email', 'first_name', 'last_name', 'company', 'tags', 'status', 'custom_fields', 'Plan']);

  it('reads a row into a contact: normalised email, trimmed cells, tags as JSON or a list, custom fields merged with extra columns', () => {
    expect(readRow([' Ada@Example.COM ', ' Ada ', '', 'ACME', 'vip; beta,vip', 'Unsubscribed', '{"seats":3}', 'pro'], m)).toEqual({
      ok: true,
      contact: {
        email: 'Ada@example.com',
        firstName: 'Ada',
        lastName: '',
        company: 'ACME',
        tags: ['vip', 'beta'],
        customFields: { seats: 3, Plan: 'pro' },
        status: 'unsubscribed',
      },
    });
    expect(readRow(['a@example.com', '', '', '', '["x, y","z"]', '', '', ''], m)).toMatchObject({
      ok: true,
      contact: { tags: ['x, y', 'z'], status: '' },
    });
  });

  it.each([
    [['a@example.com', 'x'], 'COLUMN_COUNT'],
    [['', 'x', '', '', '', '', '', ''], 'MISSING_EMAIL'],
    [['nope', 'x', '', '', '', '', '', ''], 'INVALID_EMAIL'],
    [[`${'a'.repeat(320)}@example.com`, '', '', '', '', '', '', ''], 'INVALID_EMAIL'],
    [['a@mailinator.com', '', '', '', '', '', '', ''], 'DISPOSABLE_DOMAIN'],
    [['a@example.com', 'x'.repeat(IMPORT_LIMITS.nameChars + 1), '', '', '', '', '', ''], 'FIELD_TOO_LONG'],
    [['a@example.com', '', '', '', '[1,2]', '', '', ''], 'INVALID_TAGS'],
    [['a@example.com', '', '', '', '[broken', '', '', ''], 'INVALID_TAGS'],
    [
      ['a@example.com', '', '', '', Array.from({ length: IMPORT_LIMITS.tags + 1 }, (_, i) => `t${i}`).join(';'), '', '', ''],
      'INVALID_TAGS',
    ],
    [['a@example.com', '', '', '', 'x'.repeat(IMPORT_LIMITS.tagChars + 1), '', '', ''], 'INVALID_TAGS'],
    [['a@example.com', '', '', '', '', 'paused', '', ''], 'INVALID_STATUS'],
    [['a@example.com', '', '', '', '', '', '[1]', ''], 'INVALID_CUSTOM_FIELDS'],
    [['a@example.com', '', '', '', '', '', '', 'x'.repeat(IMPORT_LIMITS.customFieldsBytes)], 'INVALID_CUSTOM_FIELDS'],
  ])('skips %j as %s', (record, reason) => {
    expect(readRow(record, m)).toMatchObject({ ok: false, reason });
  });

  it('accepts the limits themselves', () => {
    const atLimits = readRow(
      [
        'a@example.com',
        'x'.repeat(IMPORT_LIMITS.nameChars),
        '',
        '',
        Array.from({ length: IMPORT_LIMITS.tags }, (_, i) => `t${i}`).join(';'),
        '',
        '',
        '',
      ],
      m,
    );
    expect(atLimits.ok).toBe(true);
  });

  it('merges two rows for one email: later non-empty cells win, tags and custom fields add up, status only leaves active', () => {
    const base: ImportedContact = {
      email: 'a@example.com',
      firstName: 'A',
      lastName: 'Old',
      company: '',
      tags: ['x'],
      customFields: { plan: 'free', seats: 1 },
      status: '',
    };
    const later: ImportedContact = {
      email: 'a@example.com',
      firstName: '',
      lastName: 'New',
      company: 'Co',
      tags: ['y', 'x'],
      customFields: { plan: 'pro' },
      status: 'active',
    };
    expect(mergeImported(base, later)).toEqual({
      email: 'a@example.com',
      firstName: 'A',
      lastName: 'New',
      company: 'Co',
      tags: ['x', 'y'],
      customFields: { plan: 'pro', seats: 1 },
      status: 'active',
    });
    expect(mergeImported({ ...base, status: 'unsubscribed' }, later).status).toBe('unsubscribed');
    expect(mergeImported({ ...base, status: 'active' }, { ...later, status: 'bounced' }).status).toBe('bounced');
  });
});
