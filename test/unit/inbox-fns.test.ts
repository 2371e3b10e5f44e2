import { describe, expect, it } from 'vitest';
import { asciiFilename, contentDisposition, safeFilename, snippetOf, updatedAfterBound } from '../../src/modules/inbox/inbox.fns.ts';

/** The two filename parameters of a Content-Disposition value, decoded. */
function parameters(header: string): { ascii: string; utf8: string } {
  const match = /^attachment; filename="([^"\\]*)"; filename\*=UTF-8''([A-Za-z0-9%._~-]+)$/.exec(header);
  if (!match) throw new Error(`unexpected header: ${header}`);
  return { ascii: match[1]!, utf8: decodeURIComponent(match[2]!) };
}

describe('contentDisposition', () => {
  it.each([
    ['report.pdf', 'report.pdf', 'report.pdf'],
    ['Résumé 2026.docx', 'Resume 2026.docx', 'Résumé 2026.docx'],
    ['文件.txt', '__.txt', '文件.txt'],
    ['😀.png', '_.png', '😀.png'],
    ['a"b\\c.txt', 'a_b_c.txt', 'a"b_c.txt'],
    ["it's (final) *draft*!.txt", "it's (final) *draft*!.txt", "it's (final) *draft*!.txt"],
    ['../../etc/passwd', '.._.._etc_passwd', '.._.._etc_passwd'],
    ['x\r\nSet-Cookie: a=1', 'x__Set-Cookie: a=1', 'x__Set-Cookie: a=1'],
    ['100%; filename=evil.exe', '100__ filename=evil.exe', '100%; filename=evil.exe'],
    ['invoice\u202Efdp.exe', 'invoice_fdp.exe', 'invoice_fdp.exe'],
    ['nul\u0000byte.bin', 'nul_byte.bin', 'nul_byte.bin'],
    ['lone\uD800surrogate.txt', 'lone_surrogate.txt', 'lone\uFFFDsurrogate.txt'],
    ['', 'attachment', 'attachment'],
    ['   ', 'attachment', 'attachment'],
    ['..', 'attachment', 'attachment'],
    ['文件', 'attachment', '文件'],
  ])('%j → filename="%s", filename*=%s', (input, ascii, utf8) => {
    const header = contentDisposition(input);
    expect(header).toMatch(/^[\x20-\x7e]+$/);
    expect(parameters(header)).toEqual({ ascii, utf8 });
  });

  it('bounds a long name and keeps its extension', () => {
    const name = `${'é'.repeat(500)}.pdf`;
    expect([...safeFilename(name)]).toHaveLength(180);
    expect(safeFilename(name).endsWith('.pdf')).toBe(true);
    expect(asciiFilename(name)).toBe(`${'e'.repeat(176)}.pdf`);
  });
});

describe('snippetOf', () => {
  it('collapses whitespace and cuts at 200 characters', () => {
    expect(snippetOf('  Hi\r\n\tthere  ')).toBe('Hi there');
    expect(snippetOf('x'.repeat(200))).toBe('x'.repeat(200));
    expect(snippetOf('😀'.repeat(201))).toBe(`${'😀'.repeat(199)}…`);
  });
});

describe('updatedAfterBound', () => {
  it('keeps a time and clamps anything before 1970 to the epoch', () => {
    expect(updatedAfterBound('2026-11-21T09:00:00.123456+01:00').toISOString()).toBe('2026-11-21T08:00:00.123Z');
    expect(updatedAfterBound('1000-01-01T00:00:00Z').getTime()).toBe(0);
  });
});
