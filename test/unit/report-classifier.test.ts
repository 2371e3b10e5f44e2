import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { classifyInbound, emailIdFromMessageId, type InboundReport } from '../../src/modules/inbound/report-classifier.ts';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'mail');
const BOUNCE_DOMAIN = 'bounces.herald.test';
const EMAIL_ID = '6b013b9e74695063bb1053f9';

interface Expected {
  kind: InboundReport['kind'];
  recipients?: (string | { email: string; bounceType: string | null; status: string | null })[];
  feedbackType?: string | null;
  originalMessageId?: string | null;
  ambiguous?: boolean;
  note?: string;
}

const expected = JSON.parse(readFileSync(join(FIXTURES, 'expected.json'), 'utf8')) as Record<string, Expected>;

/** The envelope sender a corpus message arrived with: its Return-Path, when it kept one. */
function envelopeSender(raw: Buffer): string {
  const head = raw.toString('latin1').split(/\r?\n\r?\n/)[0] ?? '';
  const returnPath = /^Return-Path:[ \t]*<?([^>\r\n]*)>?/im.exec(head);
  return returnPath ? returnPath[1]!.trim() : 'sender@corpus.example';
}

function classify(raw: Buffer | string, rcptTo = ['inbox@herald.test'], mailFrom = ''): Promise<InboundReport> {
  return classifyInbound({ raw: Buffer.isBuffer(raw) ? raw : Buffer.from(raw), mailFrom, rcptTo, bounceDomain: BOUNCE_DOMAIN });
}

function crlf(lines: string[]): string {
  return lines.join('\r\n');
}

function dsn(
  recipients: { email: string; action: string; status: string; diagnostic?: string }[],
  originalId = `${EMAIL_ID}.0@mail.example.com`,
): string {
  const blocks = recipients.map((r) =>
    crlf([
      `Final-Recipient: rfc822; ${r.email}`,
      `Action: ${r.action}`,
      `Status: ${r.status}`,
      ...(r.diagnostic ? [`Diagnostic-Code: smtp; ${r.diagnostic}`] : []),
    ]),
  );
  return crlf([
    'From: Mail Delivery System <MAILER-DAEMON@mx.example.net>',
    `To: bounce+${EMAIL_ID}@${BOUNCE_DOMAIN}`,
    'Subject: Undelivered Mail Returned to Sender',
    'Message-ID: <report.1@mx.example.net>',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="b1"',
    '',
    '--b1',
    'Content-Type: text/plain',
    '',
    'This is the mail system at host mx.example.net.',
    '',
    '--b1',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.example.net',
    '',
    blocks.join('\r\n\r\n'),
    '',
    '--b1',
    'Content-Type: text/rfc822-headers',
    '',
    'From: news@example.com',
    'To: someone@example.org',
    `Message-ID: <${originalId}>`,
    'Subject: Hello',
    '',
    '--b1--',
    '',
  ]);
}

describe('classifyInbound over the real-world corpus', () => {
  const files = Object.keys(expected).sort();

  it('has at least 120 messages, each with an expected result', () => {
    expect(files.length).toBeGreaterThanOrEqual(120);
  });

  // Over SMTP every line ends in CRLF, whatever the fixture file uses: check both forms.
  const cases = files.flatMap(
    (file) =>
      [
        [file, 'as stored'],
        [file, 'with CRLF line ends'],
      ] as const,
  );
  it.each(cases)('%s (%s)', async (file, form) => {
    const want = expected[file]!;
    const stored = readFileSync(join(FIXTURES, file));
    const raw = form === 'as stored' ? stored : Buffer.from(stored.toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1');
    const got = await classify(raw, ['inbox@herald.test'], envelopeSender(raw));
    expect(got.kind).toBe(want.kind);
    if (got.kind === 'bounce' || got.kind === 'delay') {
      const recipients = want.recipients as { email: string; bounceType: string | null; status: string | null }[];
      expect(got.recipients.map((r) => r.email)).toEqual(recipients.map((r) => r.email));
      if (!want.ambiguous) {
        expect(got.recipients.map((r) => [r.bounceType, r.status])).toEqual(recipients.map((r) => [r.bounceType, r.status]));
      }
      expect(got.originalMessageId).toBe(want.originalMessageId ?? null);
    }
    if (got.kind === 'complaint') {
      expect(got.recipients).toEqual(want.recipients);
      expect(got.feedbackType).toBe(want.feedbackType);
    }
  });
});

describe('classifyInbound: delivery status notifications', () => {
  it('takes the email id from the VERP recipient and the original Message-ID from the report', async () => {
    const got = await classify(
      dsn([{ email: 'Gone@Example.org', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 user unknown' }]),
      [`bounce+${EMAIL_ID.toUpperCase()}@${BOUNCE_DOMAIN.toUpperCase()}`],
    );
    expect(got).toEqual({
      kind: 'bounce',
      format: 'dsn',
      emailId: EMAIL_ID,
      originalMessageId: `${EMAIL_ID}.0@mail.example.com`,
      reportingMta: 'mx.example.net',
      recipients: [
        { email: 'gone@example.org', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 user unknown', bounceType: 'hard' },
      ],
    });
  });

  it('ignores a VERP address on another domain or with a malformed id', async () => {
    const report = dsn([{ email: 'a@example.org', action: 'failed', status: '5.1.1' }]);
    for (const rcpt of [
      `bounce+${EMAIL_ID}@elsewhere.test`,
      `bounce+${EMAIL_ID.slice(1)}@${BOUNCE_DOMAIN}`,
      `bounces+${EMAIL_ID}@${BOUNCE_DOMAIN}`,
    ]) {
      const got = await classify(report, [rcpt]);
      expect(got.kind === 'bounce' && got.emailId).toBeNull();
    }
  });

  it('calls 5.x.x hard, 4.x.x soft and mailbox full (5.2.2) soft', async () => {
    const got = await classify(
      dsn([
        { email: 'unknown@example.org', action: 'failed', status: '5.1.1' },
        { email: 'later@example.org', action: 'failed', status: '4.4.7' },
        { email: 'full@example.org', action: 'failed', status: '5.2.2' },
        { email: 'quota@example.org', action: 'failed', status: '5.0.0', diagnostic: '552 mailbox is full' },
      ]),
    );
    expect(got.kind).toBe('bounce');
    if (got.kind !== 'bounce') return;
    expect(got.recipients.map((r) => [r.email, r.bounceType])).toEqual([
      ['unknown@example.org', 'hard'],
      ['later@example.org', 'soft'],
      ['full@example.org', 'soft'],
      ['quota@example.org', 'soft'],
    ]);
  });

  it('reports a delayed DSN as a delay, not a bounce', async () => {
    const got = await classify(dsn([{ email: 'slow@example.org', action: 'delayed', status: '4.4.1', diagnostic: '421 try again later' }]));
    expect(got.kind).toBe('delay');
    if (got.kind === 'delay') expect(got.recipients[0]).toMatchObject({ email: 'slow@example.org', action: 'delayed', bounceType: 'soft' });
  });

  it('treats a success-only DSN as an ordinary message', async () => {
    const got = await classify(dsn([{ email: 'ok@example.org', action: 'delivered', status: '2.0.0' }]));
    expect(got).toEqual({ kind: 'message' });
  });
});

describe('classifyInbound: complaints and auto-replies', () => {
  it('reads an ARF report: recipient, feedback type, user agent and original Message-ID', async () => {
    const raw = crlf([
      'From: fbl@isp.example',
      `To: bounce+${EMAIL_ID}@${BOUNCE_DOMAIN}`,
      'Subject: Abuse report',
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=feedback-report; boundary="b2"',
      '',
      '--b2',
      'Content-Type: text/plain',
      '',
      'This is an abuse report.',
      '--b2',
      'Content-Type: message/feedback-report',
      '',
      'Feedback-Type: abuse',
      'User-Agent: ExampleFBL/1.0',
      'Version: 1',
      'Original-Rcpt-To: <Reader@Example.org>',
      '',
      '--b2',
      'Content-Type: text/rfc822-headers',
      '',
      'From: news@example.com',
      `Message-ID: <${EMAIL_ID}.3@news.example.com>`,
      '',
      '--b2--',
      '',
    ]);
    const got = await classify(raw, [`bounce+${EMAIL_ID}@${BOUNCE_DOMAIN}`]);
    expect(got).toEqual({
      kind: 'complaint',
      emailId: EMAIL_ID,
      originalMessageId: `${EMAIL_ID}.3@news.example.com`,
      feedbackType: 'abuse',
      userAgent: 'ExampleFBL/1.0',
      recipients: ['reader@example.org'],
    });
  });

  it.each([
    ['Auto-Submitted: auto-replied', 'Subject: Re: your question'],
    ['X-Autoreply: yes', 'Subject: Re: your question'],
    ['Precedence: auto_reply', 'Subject: Re: your question'],
    ['X-Mailer: test', 'Subject: Out of Office: your question'],
    ['X-Mailer: test', 'Subject: Automatic reply: undeliverable invoices'],
    ['X-Mailer: test', 'Subject: Abwesenheitsnotiz: Rechnung'],
  ])('classifies %s / %s as an auto-reply, never a bounce', async (header, subject) => {
    const raw = crlf([
      'From: person@example.org',
      'To: news@example.com',
      subject,
      header,
      '',
      'I am away until Monday; delivery of replies may be delayed.',
      '',
    ]);
    const got = await classify(raw);
    expect(got.kind).toBe('auto_reply');
  });

  it('still calls an Exim bounce a bounce although it is marked Auto-Submitted', async () => {
    const raw = crlf([
      'From: Mail Delivery System <Mailer-Daemon@mx.example.net>',
      'To: news@example.com',
      'Subject: Mail delivery failed: returning message to sender',
      'Auto-Submitted: auto-replied',
      'X-Failed-Recipients: gone@example.org',
      '',
      'This message was created automatically by mail delivery software.',
      '',
      'A message that you sent could not be delivered to one or more of its',
      'recipients. This is a permanent error. The following address(es) failed:',
      '',
      '  gone@example.org',
      '    SMTP error from remote mail server after RCPT TO:<gone@example.org>:',
      '    550 5.1.1 <gone@example.org>: Recipient address rejected: User unknown',
      '',
    ]);
    const got = await classify(raw);
    expect(got).toMatchObject({
      kind: 'bounce',
      format: 'exim',
      recipients: [{ email: 'gone@example.org', status: '5.1.1', bounceType: 'hard' }],
    });
  });

  it('leaves an ordinary message that mentions delivery alone', async () => {
    const raw = crlf([
      'From: person@example.org',
      'To: news@example.com',
      'Subject: The delivery failed again',
      '',
      'The courier could not deliver the parcel.',
      '',
    ]);
    expect(await classify(raw, ['inbox@herald.test'], 'person@example.org')).toEqual({ kind: 'message' });
  });
});

describe('classifyInbound: garbage in', () => {
  it.each([
    ['an empty buffer', Buffer.alloc(0)],
    ['random bytes', Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256))],
    ['headers only', Buffer.from('Subject: x\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=\r\n')],
    [
      'a broken report',
      Buffer.from('Content-Type: multipart/report; report-type=feedback-report; boundary="z"\r\n\r\n--z\r\n\x00\xff\r\n'),
    ],
  ])('never throws on %s', async (_name, raw) => {
    const got = await classify(raw);
    expect(['message', 'bounce', 'complaint']).toContain(got.kind);
  });
});

describe('emailIdFromMessageId', () => {
  it.each([
    [`<${EMAIL_ID}.0@mail.example.com>`, EMAIL_ID],
    [`${EMAIL_ID.toUpperCase()}.12@mail.example.com`, EMAIL_ID],
    [`<${EMAIL_ID}@mail.example.com>`, null],
    [`<${EMAIL_ID.slice(1)}.0@mail.example.com>`, null],
    [`<x${EMAIL_ID}.0@mail.example.com>`, null],
    ['<CAF=abc@mail.gmail.com>', null],
    ['', null],
  ])('%s → %s', (messageId, id) => {
    expect(emailIdFromMessageId(messageId)).toBe(id);
  });
});
