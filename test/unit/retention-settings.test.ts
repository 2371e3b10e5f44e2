import { describe, expect, it } from 'vitest';
import { idTimestamp, newId } from '../../db/ids.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { idBefore } from '../../src/modules/retention/retention.fns.ts';

const DAY = 86_400_000;

describe('retention settings', () => {
  it('default to 90 days of emails and inbound mail, 30 of webhooks and imports, batches of 1000', () => {
    expect(loadConfig({}).retention).toEqual({ days: { emails: 90, webhooks: 30, inbound: 90, contactImports: 30 }, batchSize: 1000 });
  });

  it.each([
    ['off', 0],
    ['0', 0],
    ['1', 1],
    ['3650', 3650],
  ])('reads RETENTION_EMAILS_DAYS=%s as %i days', (text, days) => {
    expect(loadConfig({ RETENTION_EMAILS_DAYS: text }).retention.days.emails).toBe(days);
  });

  it.each([
    ['RETENTION_EMAILS_DAYS', '3651'],
    ['RETENTION_WEBHOOKS_DAYS', '-1'],
    ['RETENTION_INBOUND_DAYS', '30d'],
    ['RETENTION_CONTACT_IMPORTS_DAYS', 'never'],
    ['RETENTION_BATCH_SIZE', '9'],
    ['RETENTION_BATCH_SIZE', '10001'],
    ['RETENTION_BATCH_SIZE', 'off'],
  ])('refuses %s=%s', (name, text) => {
    expect(() => loadConfig({ [name]: text })).toThrow(ConfigError);
  });

  it('takes the batch size within 10–10000', () => {
    expect(loadConfig({ RETENTION_BATCH_SIZE: '10' }).retention.batchSize).toBe(10);
    expect(loadConfig({ RETENTION_BATCH_SIZE: '10000' }).retention.batchSize).toBe(10_000);
  });
});

describe('idBefore', () => {
  const now = new Date('2026-11-27T12:00:00.000Z');

  it('is above every id of a record older than the period and below every younger one', () => {
    const cutoff = idBefore(now, 30);
    expect(newId(new Date(now.getTime() - 30 * DAY - 1000)) < cutoff).toBe(true);
    expect(newId(new Date(now.getTime() - 30 * DAY)) >= cutoff).toBe(true);
    expect(newId(now) > cutoff).toBe(true);
    expect(idTimestamp(cutoff)).toEqual(new Date(now.getTime() - 30 * DAY));
  });
});
