import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.ts';
import { replyForRefusal, sendRequestOf } from '../../src/smtp/submission.fns.ts';

const raw = (headers: string, body = 'Hello') =>
  Buffer.from(`${headers}\r\nMIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\n${body}\r\n`);

describe('SMTP submission: a submitted message as a send request', () => {
  it('splits the envelope into to, cc and bcc by the headers and keeps the display name', async () => {
    const parsed = await simpleParser(raw('From: "Shop, Inc." <Shop@Example.com>\r\nTo: a@x.example\r\nCc: b@x.example\r\nSubject: Hi'));
    expect(
      sendRequestOf(parsed, { mailFrom: 'bounce@x.example', rcptTo: ['A@x.example', 'b@x.example', 'hidden@x.example'] }),
    ).toMatchObject({
      from: '"Shop, Inc." <Shop@Example.com>',
      to: ['a@x.example'],
      cc: ['b@x.example'],
      bcc: ['hidden@x.example'],
      subject: 'Hi',
      text: 'Hello\n',
    });
  });

  it('keeps the headers the API allows and drops the ones Herald sets', async () => {
    const parsed = await simpleParser(
      raw(
        'From: s@x.example\r\nTo: a@x.example\r\nSubject: Hi\r\nMessage-ID: <m@x>\r\nX-Campaign: spring\r\nReferences: <r1@x>\r\n <r2@x>',
      ),
    );
    expect(sendRequestOf(parsed, { mailFrom: null, rcptTo: ['a@x.example'] }).headers).toEqual({
      'X-Campaign': 'spring',
      References: '<r1@x> <r2@x>',
    });
  });

  it('drops the identity headers a submitted message carries (Resent-*, Sender)', async () => {
    const parsed = await simpleParser(
      raw(
        'From: s@x.example\r\nTo: a@x.example\r\nSubject: Hi\r\nSender: boss@elsewhere.example\r\nResent-From: boss@elsewhere.example\r\nResent-Sender: boss@elsewhere.example\r\nResent-Date: Fri, 27 Nov 2026 09:00:00 +0000\r\nX-Campaign: spring',
      ),
    );
    expect(sendRequestOf(parsed, { mailFrom: null, rcptTo: ['a@x.example'] }).headers).toEqual({ 'X-Campaign': 'spring' });
  });

  it('refuses a message with no envelope recipient in To, or without a Subject, with 550', async () => {
    const noTo = await simpleParser(raw('From: s@x.example\r\nTo: a@x.example\r\nSubject: Hi'));
    expect(() => sendRequestOf(noTo, { mailFrom: null, rcptTo: ['b@x.example'] })).toThrow(expect.objectContaining({ responseCode: 550 }));
    const noSubject = await simpleParser(raw('From: s@x.example\r\nTo: a@x.example'));
    expect(() => sendRequestOf(noSubject, { mailFrom: null, rcptTo: ['a@x.example'] })).toThrow(
      expect.objectContaining({ responseCode: 550 }),
    );
  });

  it('answers refusals as SMTP replies with their reason', () => {
    const code = (error: AppError) => replyForRefusal(error).responseCode;
    expect(code(new AppError('forbidden', 'x', { reason: 'RECIPIENT_SUPPRESSED' }))).toBe(550);
    expect(replyForRefusal(new AppError('forbidden', 'not ours', { reason: 'DOMAIN_NOT_FOUND' })).message).toBe(
      '5.7.1 not ours (DOMAIN_NOT_FOUND)',
    );
    expect(code(new AppError('payment_required', 'no credits'))).toBe(550);
    expect(code(new AppError('payload_too_large', 'big'))).toBe(552);
    expect(code(new AppError('rate_limited', 'cap'))).toBe(451);
    expect(code(new AppError('invalid_request', 'bad'))).toBe(550);
    expect(code(new AppError('service_unavailable', 'down'))).toBe(451);
  });
});
