import { describe, expect, it } from 'vitest';
import { bareMessageId, normalizeSubject, parseMessageIdList, participantsOf, replyCandidates } from '../../src/modules/inbox/threading.ts';

describe('normalizeSubject', () => {
  it.each([
    ['Hello world', 'hello world'],
    ['Re: Hello world', 'hello world'],
    ['RE: re: Fwd: Hello world', 'hello world'],
    ['AW: SV: Antw: WG: Hello world', 'hello world'],
    ['[ext] Re: Hello world', 'hello world'],
    ['Re: [EXTERNAL] [list] FW: Hello world', 'hello world'],
    ['Re[2]: Re(3): Hello world', 'hello world'],
    ['Re：Hello world', 'hello world'],
    ['  Hello    \t world  ', 'hello world'],
    ['Hello world (fwd)', 'hello world'],
    ['Re:', ''],
    ['', ''],
  ])('%j → %j', (subject, expected) => {
    expect(normalizeSubject(subject)).toBe(expected);
  });

  it('keeps words that merely start like a prefix', () => {
    expect(normalizeSubject('Regarding: the invoice')).toBe('regarding: the invoice');
    expect(normalizeSubject('Svar on time')).toBe('svar on time');
    expect(normalizeSubject('Invoice [draft] 3')).toBe('invoice [draft] 3');
  });
});

describe('Message-ID lists', () => {
  it('strips angle brackets and whitespace', () => {
    expect(bareMessageId(' <abc@example.com> ')).toBe('abc@example.com');
    expect(bareMessageId('abc@example.com')).toBe('abc@example.com');
  });

  it('parses References with brackets, commas, folding and duplicates', () => {
    expect(parseMessageIdList('<a@x>\r\n <b@y>,<c@z> <a@x>')).toEqual(['a@x', 'b@y', 'c@z']);
    expect(parseMessageIdList(['<a@x>', '<b@y>'])).toEqual(['a@x', 'b@y']);
    expect(parseMessageIdList('a@x b@y')).toEqual(['a@x', 'b@y']);
    expect(parseMessageIdList(null)).toEqual([]);
    expect(parseMessageIdList(`<${'x'.repeat(999)}@y>`)).toEqual([]);
  });

  it('looks for In-Reply-To first, then References newest first', () => {
    expect(replyCandidates('c@z', ['a@x', 'b@y', 'c@z'])).toEqual(['c@z', 'b@y', 'a@x']);
    expect(replyCandidates(null, ['a@x', 'b@y'])).toEqual(['b@y', 'a@x']);
    expect(replyCandidates(null, [])).toEqual([]);
  });
});

describe('participants', () => {
  it('lower-cases and de-duplicates', () => {
    expect(participantsOf(['A@X.com', 'a@x.com', null, '', ' b@y.com '])).toEqual(['a@x.com', 'b@y.com']);
  });
});
