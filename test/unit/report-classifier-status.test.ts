import { describe, expect, it } from 'vitest';
import { classifyInbound } from '../../src/modules/inbound/report-classifier.ts';
import { resolveStatus } from '../../src/modules/inbound/report-fields.ts';
import { parseSesNotification } from '../../src/modules/inbound/report-ses.ts';
import { remoteStatus, statusFromWording } from '../../src/modules/inbound/report-status-text.ts';

function crlf(lines: string[]): string {
  return lines.join('\r\n');
}

function classify(raw: string, mailFrom = ''): ReturnType<typeof classifyInbound> {
  return classifyInbound({ raw: Buffer.from(raw), mailFrom, rcptTo: ['inbox@herald.test'], bounceDomain: 'bounces.herald.test' });
}

describe('statusFromWording', () => {
  it.each([
    ['550 - Requested action not taken: no such user here', 'failed', '5.1.1'],
    ['User some.name (a@example.jp) not listed in Domino Directory', 'failed', '5.1.1'],
    ['As their mailbox is full.', 'failed', '5.2.2'],
    ['452 mailbox is full, come back later', 'failed', '4.2.2'],
    ['DNS lookup failure: host cx.example.org not found', 'failed', '5.1.2'],
    ['Name service error for domain example.com: Host not found, try again', 'failed', '4.4.3'],
    ['The user(s) account is disabled.', 'failed', '5.2.1'],
    ['Could not deliver for the last 432000 seconds. Giving up.', 'failed', '5.4.7'],
    ["I'm not going to try again; this message has been in the queue too long.", 'failed', '5.4.7'],
    ['Message will be expired soon', 'delayed', '4.4.7'],
    ['552 Requested mail action aborted', 'failed', '5.2.2'],
    ['550 Administrative prohibition', 'failed', '5.0.0'],
    ['421 Service not available', 'failed', '4.0.0'],
    ['Something went wrong', 'failed', null],
    ['Your message was rejected', null, null],
  ] as const)('%s (%s) → %s', (text, action, status) => {
    expect(statusFromWording(text, action)).toBe(status);
  });

  it('reads broad phrases ("denied", "rejected") only in a recipient diagnostic, not in whole-report text', () => {
    expect(statusFromWording('Learn more at https://support.example.com/?p=CustomFromDenied', 'failed')).toBe('5.7.1');
    expect(statusFromWording('Learn more at https://support.example.com/?p=CustomFromDenied', 'failed', true)).toBeNull();
  });
});

describe('remoteStatus and resolveStatus', () => {
  it("prefers the remote server's code quoted after a reply code", () => {
    expect(remoteStatus("5.1.0 - Unknown address error 550-'5.2.2 <a@example.jp>... Mailbox Full'")).toBe('5.2.2');
    expect(remoteStatus('smtp; 5.1.1 user unknown')).toBe('5.1.1');
    expect(remoteStatus(null)).toBeNull();
  });

  it.each([
    ['5.0.0 (permanent failure)', "5.1.0 - Unknown address error 550-'5.7.1 <x@example.com>... Access denied'", '5.7.1'],
    ['4.4.7', '554 4.4.7 Message expired: unable to deliver in 840 minutes.<421 4.4.2 Connection timed out>', '4.4.2'],
    ['5.1.1', '550 5.2.2 mailbox full', '5.1.1'],
    ['5.0.0', 'X-Notes; Error transferring to relay.example.org; Maximum hop count exceeded.', '5.0.0'],
    [null, '550 5.1.1 <a@example.org>: Recipient address rejected', '5.1.1'],
    [null, 'smtp; 550 no such user', '5.1.1'],
  ])('Status %s with diagnostic %s → %s', (field, diagnostic, status) => {
    expect(resolveStatus(field, diagnostic)).toBe(status);
  });
});

describe('parseSesNotification', () => {
  const bounce = {
    notificationType: 'Bounce',
    bounce: {
      bounceType: 'Permanent',
      reportingMTA: 'dsn; a1-2.smtp-out.amazonses.com',
      bouncedRecipients: [
        { emailAddress: 'Gone@Example.org', action: 'failed', status: '5.1.1', diagnosticCode: 'smtp; 550 5.1.1 user unknown' },
      ],
    },
    mail: { headers: [{ name: 'Message-ID', value: '<6b013b9e74695063bb1053f9.0@mail.example.com>' }] },
  };

  it('reads a bounce, folded by SNS with "!" + newline + space', () => {
    const json = JSON.stringify(bounce);
    const folded = `${json.slice(0, 60)}!\n ${json.slice(60)}\n\n--\nIf you wish to stop receiving notifications from this topic, ...`;
    expect(parseSesNotification(folded)).toEqual({
      kind: 'bounce',
      reportingMta: 'a1-2.smtp-out.amazonses.com',
      originalMessageId: '6b013b9e74695063bb1053f9.0@mail.example.com',
      recipients: [
        { email: 'gone@example.org', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 user unknown', bounceType: 'hard' },
      ],
    });
  });

  it('reads the notification inside a raw SNS envelope, and complaints and deliveries', () => {
    const envelope = JSON.stringify({ Type: 'Notification', Message: JSON.stringify(bounce) });
    expect(parseSesNotification(envelope)).toMatchObject({ kind: 'bounce', recipients: [{ email: 'gone@example.org' }] });
    const complaint = {
      notificationType: 'Complaint',
      complaint: { complainedRecipients: [{ emailAddress: 'r@example.org' }], complaintFeedbackType: 'abuse' },
    };
    expect(parseSesNotification(JSON.stringify(complaint))).toEqual({
      kind: 'complaint',
      feedbackType: 'abuse',
      userAgent: null,
      originalMessageId: null,
      recipients: ['r@example.org'],
    });
    expect(parseSesNotification(JSON.stringify({ notificationType: 'Delivery' }))).toEqual({ kind: 'delivery' });
  });

  it('returns null for anything else', () => {
    expect(parseSesNotification('{"notificationType": "Bounce", broken')).toBeNull();
    expect(parseSesNotification(JSON.stringify({ notificationType: 'Other' }))).toBeNull();
    expect(parseSesNotification('hello')).toBeNull();
  });
});

describe('classifyInbound: vendor shapes are reports, mentions of them are not', () => {
  it('reads an Apache James report with the recipient after RCPT TO', async () => {
    const got = await classify(
      crlf([
        'From: postmaster@gateway.example.com',
        'To: sender@example.com',
        'Subject: Re:Test message',
        '',
        'Error: Invalid user address',
        '',
        'Error message below:',
        '550 - Requested action not taken: no such user here',
        '',
        'Message details:',
        '  MAIL FROM: sender@example.com',
        '  RCPT TO: gone@gateway.example.com',
        '',
      ]),
      'postmaster@gateway.example.com',
    );
    expect(got).toMatchObject({ kind: 'bounce', recipients: [{ email: 'gone@gateway.example.com', status: '5.1.1', bounceType: 'hard' }] });
  });

  it('leaves a message that mentions InterScan or SES wording alone', async () => {
    const plain = crlf([
      'From: person@example.org',
      'To: news@example.com',
      'Subject: InterScan renewal',
      '',
      'Our InterScan licence expires; the notificationType field of SES says Bounce, user unknown.',
      '',
    ]);
    expect(await classify(plain, 'person@example.org')).toEqual({ kind: 'message' });
  });
});
