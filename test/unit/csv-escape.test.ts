import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { describe, expect, it } from 'vitest';
import { csvStream, escapeFormulaCell } from '../../src/modules/contacts/csv.ts';

const rows = (...records: unknown[][]): AsyncIterable<unknown[]> => Readable.from(records);

/** CSV injection (OWASP): what a spreadsheet could run as a formula is written as text. */
describe('escapeFormulaCell', () => {
  it.each([
    ['=SUM(A1:A9)', "'=SUM(A1:A9)"],
    ['+1+1', "'+1+1"],
    ['-2+3', "'-2+3"],
    ['@SUM(1)', "'@SUM(1)"],
    ['\t=1', "'\t=1"],
    ['\r=1', "'\r=1"],
    ['=HYPERLINK("http://evil.test","click")', '\'=HYPERLINK("http://evil.test","click")'],
  ])('escapes %j', (cell, expected) => {
    expect(escapeFormulaCell(cell)).toBe(expected);
  });

  it.each(['', 'Ada', 'a=b', ' =1', "'quoted", '["vip"]', '{"plan":"pro"}', '2026-01-01T00:00:00.000Z', 'ünïcødé', '\n=1'])(
    'leaves %j alone',
    (cell) => {
      expect(escapeFormulaCell(cell)).toBe(cell);
    },
  );
});

describe('csvStream', () => {
  it('escapes text cells by default, leaves numbers, the header and empty cells alone, and writes raw values on request', async () => {
    const records = () => rows([1, '=1+1', null, '-x,y'], [-5, 'plain', '', '@me']);
    expect(await text(csvStream(['row', 'a', 'b', 'c'], records(), { escapeFormulas: true }))).toBe(
      "row,a,b,c\n1,'=1+1,,\"'-x,y\"\n-5,plain,,'@me\n",
    );
    expect(await text(csvStream(['row', 'a', 'b', 'c'], records(), { escapeFormulas: false }))).toBe(
      'row,a,b,c\n1,=1+1,,"-x,y"\n-5,plain,,@me\n',
    );
  });
});
