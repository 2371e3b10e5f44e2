import { createReadStream } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { automaticHeader, autoReplyReason } from '../../src/modules/inbound/auto-reply.ts';
import { parseMessageStream } from '../../src/modules/inbound/mime.ts';

const FIXTURES = new URL('../fixtures/mail/auto-reply/', import.meta.url);

const line = (key: string, value: string) => ({ key: key.toLowerCase(), line: `${key}: ${value}` });

describe('automaticHeader', () => {
  it.each([
    ['Auto-Submitted', 'auto-replied', 'Auto-Submitted: auto-replied'],
    ['Auto-Submitted', 'Auto-Generated (vacation)', 'Auto-Submitted: auto-generated'],
    ['Auto-Submitted', 'auto-notified; owner-email="a@b.example"', 'Auto-Submitted: auto-notified'],
    ['X-Autoreply', 'yes', 'X-Autoreply: yes'],
    ['X-Autorespond', 'Vacation', 'X-Autorespond: vacation'],
    ['Precedence', 'bulk', 'Precedence: bulk'],
    ['Precedence', 'Auto_Reply', 'Precedence: auto_reply'],
    ['Precedence', 'junk', 'Precedence: junk'],
    ['Precedence', 'list', 'Precedence: list'],
  ])('marks %s: %s as automatic', (key, value, reason) => {
    expect(automaticHeader([line('From', 'a@b.example'), line(key, value)])).toBe(reason);
  });

  it.each([
    ['Auto-Submitted', 'no'],
    ['Auto-Submitted', 'No (a person wrote this)'],
    ['X-Autoreply', 'no'],
    ['Precedence', 'first-class'],
    ['X-Auto-Response-Suppress', 'All'],
  ])('leaves %s: %s to a person', (key, value) => {
    expect(automaticHeader([line(key, value)])).toBeNull();
  });

  it('reads a folded header line', () => {
    expect(automaticHeader([{ key: 'auto-submitted', line: 'Auto-Submitted:\r\n auto-replied' }])).toBe('Auto-Submitted: auto-replied');
  });
});

describe('autoReplyReason', () => {
  it.each([
    'Automatic reply: News',
    'Auto reply: News',
    'Auto-Reply: News',
    'AutoReply: News',
    'Out of Office: News',
    'Out of the office: back Monday',
    'Abwesenheitsnotiz: News',
    'Réponse automatique : News',
    'Respuesta automática: News',
  ])('marks the subject "%s" as automatic', (subject) => {
    expect(autoReplyReason({ automaticHeader: null, subject })).toMatch(/^subject: /);
  });

  it.each(['Re: News', 'Re: Automatic reply settings', 'I was out of office: sorry!', 'Re: Out of Office: News', 'Absence'])(
    'leaves the subject "%s" to a person',
    (subject) => {
      expect(autoReplyReason({ automaticHeader: null, subject })).toBeNull();
    },
  );

  it('prefers the header reason', () => {
    expect(autoReplyReason({ automaticHeader: 'Precedence: bulk', subject: 'Automatic reply: News' })).toBe('Precedence: bulk');
  });

  it.each([
    ['sisimai-rfc3834-01-vacation.eml', 'Auto-Submitted: auto-replied'],
    ['sisimai-rfc3834-02-vacation.eml', 'subject: Automatic reply:'],
    ['sisimai-rfc3834-03-vacation.eml', 'subject: Auto reply:'],
    ['sisimai-rfc3834-05-vacation.eml', 'Auto-Submitted: auto-replied'],
    ['sisimai-rfc3834-06.eml', 'Auto-Submitted: auto-replied'],
  ])('recognises the real vacation notice %s', async (file, reason) => {
    const parsed = await parseMessageStream(createReadStream(new URL(file, FIXTURES)));
    expect(autoReplyReason(parsed)).toBe(reason);
  });
});
