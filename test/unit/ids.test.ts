import { describe, expect, it } from 'vitest';
import { ID_PATTERN, idTimestamp, isId, newId } from '../../db/ids.ts';

describe('newId', () => {
  it('returns 24 lowercase hex characters matching the inbox id pattern', () => {
    const id = newId();
    expect(id).toMatch(/^[0-9a-f]{24}$/);
    expect(ID_PATTERN.test(id)).toBe(true);
  });

  it('encodes the creation second and sorts by time', () => {
    const earlier = newId(new Date('2026-01-01T00:00:00Z'));
    const later = newId(new Date('2026-01-01T00:00:01Z'));
    expect(idTimestamp(earlier).toISOString()).toBe('2026-01-01T00:00:00.000Z');
    expect(earlier < later).toBe(true);
  });

  it('is unique within one second', () => {
    const at = new Date('2026-06-01T12:00:00Z');
    const ids = Array.from({ length: 10_000 }, () => newId(at));
    expect(new Set(ids).size).toBe(10_000);
    expect(new Set(ids.map((id) => id.slice(0, 8))).size).toBe(1);
  });
});

describe('isId', () => {
  it.each([
    ['6b013b9e74695063bb1053f9', true],
    ['6B013B9E74695063BB1053F9', true],
    ['6b013b9e74695063bb1053f', false],
    ['6b013b9e74695063bb1053f9a', false],
    ['zb013b9e74695063bb1053f9', false],
    ['', false],
  ])('%s → %s', (value, expected) => {
    expect(isId(value)).toBe(expected);
  });
});
