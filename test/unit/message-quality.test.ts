import { describe, expect, it } from 'vitest';
import { messageProblems } from '../support/message-quality.ts';

/** The suite's message checker must catch what it is there to catch. */
describe('message quality checker (test support)', () => {
  it('passes a well-formed message', async () => {
    const raw = Buffer.from(
      'From: a@example.com\r\nTo: b@example.com\r\nDate: Wed, 25 Nov 2026 06:00:00 +0000\r\nMessage-ID: <x@example.com>\r\nSubject: ok\r\n\r\nhello\r\n',
    );
    expect(await messageProblems(raw)).toEqual([]);
  });

  it('flags bare LF, long lines, and a missing Message-ID and Date', async () => {
    const raw = Buffer.from(`From: a@example.com\nSubject: bad\n\n${'x'.repeat(1200)}\n`);
    expect(await messageProblems(raw)).toEqual(['bare LF', 'line 1 is over 998 octets', 'no Message-ID', 'no Date']);
  });
});
