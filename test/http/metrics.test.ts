import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broadcast, Contact, Domain, EmailEvent, type ContactStatus, type EmailEventType } from '../../db/entities/index.ts';
import { scopeToOrg, type MikroORM } from '../../db/orm.ts';
import { recordEmailEvent, recordEmailEvents } from '../../src/modules/metrics/email-events.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey, unique } from '../support/factories.ts';
import { apiClient, expectError } from '../support/http.ts';

const DAY = 24 * 3600 * 1000;
const HOUR = 3600 * 1000;

/** Start of the UTC day `daysAgo` days before today. */
function dayStart(daysAgo: number): Date {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - daysAgo * DAY);
}
const dateOf = (daysAgo: number) => dayStart(daysAgo).toISOString().slice(0, 10);

interface Batch {
  at: Date;
  domain: string;
  broadcastId?: string;
  counts: Partial<Record<EmailEventType, number>>;
}

/** Records the events of the batches through recordEmailEvent, in one transaction. */
async function seed(orm: MikroORM, orgId: string, batches: Batch[]): Promise<void> {
  await scopeToOrg(orm.em, orgId).transactional(async (em) => {
    let recipient = 0;
    for (const batch of batches) {
      for (const [type, count] of Object.entries(batch.counts) as [EmailEventType, number][]) {
        for (let i = 0; i < count; i += 1) {
          recipient += 1;
          await recordEmailEvent(em, {
            orgId,
            type,
            recipient: `r${recipient}@example.com`,
            domain: batch.domain,
            broadcastId: batch.broadcastId ?? null,
            occurredAt: batch.at,
          });
        }
      }
    }
    await em.flush();
  });
}

async function createBroadcastRow(orm: MikroORM, orgId: string, name: string): Promise<string> {
  const em = scopeToOrg(orm.em, orgId);
  const broadcast = em.create(Broadcast, {
    orgId,
    name,
    subject: 's',
    fromName: 'f',
    fromEmail: 'a@example.com',
    replyTo: null,
    scheduledAt: null,
  });
  await em.flush();
  return broadcast.id;
}

async function addDomains(orm: MikroORM, orgId: string, names: string[]): Promise<void> {
  const em = scopeToOrg(orm.em, orgId);
  for (const domain of names) em.create(Domain, { orgId, domain, dkimPublicKey: 'k', dkimPrivateKeyEncrypted: 'k' });
  await em.flush();
}

async function addContacts(orm: MikroORM, orgId: string, statuses: ContactStatus[]): Promise<void> {
  const em = scopeToOrg(orm.em, orgId);
  for (const status of statuses) em.create(Contact, { orgId, email: `${unique('m')}@example.com`, status });
  await em.flush();
}

const rates0 = { delivery: 0, open: 0, click: 0, ctor: 0, bounce: 0, complaint: 0, unsubscribe: 0 };

describe('GET /api/v1/metrics', () => {
  let h: ApiHarness;
  const ids: Record<string, string> = {};
  const tag = unique('m').toLowerCase();
  const mail = `mail.${tag}.test`;
  const news = `news.${tag}.test`;
  const idle = `idle.${tag}.test`;

  beforeAll(async () => {
    h = await startApiHarness();
    const orgId = h.workspace.org.id;
    await addDomains(h.stack.orm, orgId, [mail, news, idle]);
    for (const name of ['B1', 'B2', 'B3', 'B4', 'B6']) ids[name] = await createBroadcastRow(h.stack.orm, orgId, name);
    ids.B5 = 'b5b5b5b5b5b5b5b5b5b5b5b5'; // events of a broadcast whose row is gone
    const at = (daysAgo: number) => new Date(dayStart(daysAgo).getTime() + 2 * HOUR);
    await seed(h.stack.orm, orgId, [
      {
        at: at(0),
        domain: mail,
        broadcastId: ids.B1,
        counts: { sent: 10, delivered: 9, opened: 5, clicked: 2, bounced: 1, complained: 1, unsubscribed: 1 },
      },
      { at: at(3), domain: news, broadcastId: ids.B2, counts: { sent: 8, delivered: 8, opened: 4, clicked: 1 } },
      { at: at(6), domain: mail, counts: { sent: 4, delivered: 3, bounced: 1 } },
      { at: at(2), domain: mail, broadcastId: ids.B3, counts: { sent: 6, delivered: 6 } },
      { at: at(2), domain: mail, broadcastId: ids.B4, counts: { sent: 5, delivered: 5 } },
      { at: at(2), domain: mail, broadcastId: ids.B5, counts: { sent: 5, delivered: 4 } },
      { at: at(2), domain: mail, broadcastId: ids.B6, counts: { sent: 1, delivered: 1 } },
      // In 14d, 30d and 90d but not in 7d.
      { at: at(7), domain: mail, broadcastId: ids.B1, counts: { sent: 100, delivered: 100 } },
      // Older than 90 days.
      { at: at(95), domain: mail, broadcastId: ids.B1, counts: { sent: 1000, delivered: 1000 } },
    ]);
    await addContacts(h.stack.orm, orgId, ['active', 'active', 'active', 'unsubscribed', 'bounced', 'bounced', 'complained', 'suppressed']);

    const other = await createOrgWithKey(h.stack.orm);
    await addDomains(h.stack.orm, other.org.id, [`other.${tag}.test`]);
    await seed(h.stack.orm, other.org.id, [
      { at: at(0), domain: `other.${tag}.test`, broadcastId: ids.B1, counts: { sent: 50, delivered: 50, opened: 50 } },
      { at: at(1), domain: mail, counts: { sent: 7 } },
    ]);
    await addContacts(h.stack.orm, other.org.id, ['active', 'bounced']);
  });
  afterAll(() => h.close());

  it('summarises the last 7 UTC days by default, with exact counts, rates and zero-filled days', async () => {
    const response = await h.request('GET', '/api/v1/metrics');
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const data = response.body.data as Record<string, unknown>;
    expect(Object.keys(data).sort()).toEqual(['contacts', 'dailyVolume', 'domains', 'period', 'rates', 'summary', 'topCampaigns']);
    expect(data.period).toBe('7d');
    expect(data.summary).toEqual({
      sent: 39,
      delivered: 36,
      opened: 9,
      clicked: 3,
      bounced: 2,
      complained: 1,
      unsubscribed: 1,
      campaigns: 6,
    });
    expect(data.rates).toEqual({
      delivery: 0.9231,
      open: 0.25,
      click: 0.0833,
      ctor: 0.3333,
      bounce: 0.0513,
      complaint: 0.0278,
      unsubscribe: 0.0278,
    });
    const zero = { sent: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0 };
    expect(data.dailyVolume).toEqual([
      { date: dateOf(6), sent: 4, delivered: 3, opened: 0, clicked: 0, bounced: 1 },
      { date: dateOf(5), ...zero },
      { date: dateOf(4), ...zero },
      { date: dateOf(3), sent: 8, delivered: 8, opened: 4, clicked: 1, bounced: 0 },
      { date: dateOf(2), sent: 17, delivered: 16, opened: 0, clicked: 0, bounced: 0 },
      { date: dateOf(1), ...zero },
      { date: dateOf(0), sent: 10, delivered: 9, opened: 5, clicked: 2, bounced: 1 },
    ]);
    expect(data.contacts).toEqual({ total: 8, active: 3, unsubscribed: 1, bounced: 2, complained: 1 });
  });

  it('ranks the top 5 campaigns by sent (ties: more delivered), with names and rates', async () => {
    const data = (await h.request('GET', '/api/v1/metrics?period=7d')).body.data as { topCampaigns: Record<string, unknown>[] };
    expect(data.topCampaigns.map((c) => [c.broadcastId, c.name, c.sent])).toEqual([
      [ids.B1, 'B1', 10],
      [ids.B2, 'B2', 8],
      [ids.B3, 'B3', 6],
      [ids.B4, 'B4', 5],
      [ids.B5, null, 5],
    ]);
    expect(data.topCampaigns[0]).toEqual({
      broadcastId: ids.B1,
      name: 'B1',
      sent: 10,
      delivered: 9,
      opened: 5,
      clicked: 2,
      bounced: 1,
      complained: 1,
      unsubscribed: 1,
      rates: { delivery: 0.9, open: 0.5556, click: 0.2222, ctor: 0.4, bounce: 0.1, complaint: 0.1111, unsubscribe: 0.1111 },
    });
  });

  it('reports every sending domain of the workspace, busiest first, zero-filled', async () => {
    const data = (await h.request('GET', '/api/v1/metrics')).body.data as { domains: unknown[] };
    expect(data.domains).toEqual([
      { domain: mail, sent: 31, delivered: 28, bounced: 2, complained: 1, rates: { delivery: 0.9032, bounce: 0.0645, complaint: 0.0357 } },
      { domain: news, sent: 8, delivered: 8, bounced: 0, complained: 0, rates: { delivery: 1, bounce: 0, complaint: 0 } },
      { domain: idle, sent: 0, delivered: 0, bounced: 0, complained: 0, rates: { delivery: 0, bounce: 0, complaint: 0 } },
    ]);
  });

  it.each([
    ['14d', 14],
    ['30d', 30],
    ['90d', 90],
  ])('period=%s covers %i days and leaves out older events', async (period, days) => {
    const response = await h.request('GET', `/api/v1/metrics?period=${period}`);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const data = response.body.data as {
      period: string;
      summary: Record<string, number>;
      dailyVolume: { date: string; sent: number }[];
      topCampaigns: { name: string | null; sent: number }[];
    };
    expect(data.period).toBe(period);
    expect(data.summary).toMatchObject({ sent: 139, delivered: 136, campaigns: 6 });
    expect(data.dailyVolume).toHaveLength(days);
    expect(data.dailyVolume[0]!.date).toBe(dateOf(days - 1));
    expect(data.dailyVolume.at(-1)!.date).toBe(dateOf(0));
    expect(data.dailyVolume.find((d) => d.date === dateOf(7))!.sent).toBe(100);
    expect(data.dailyVolume.reduce((sum, d) => sum + d.sent, 0)).toBe(139);
    expect(data.topCampaigns[0]).toMatchObject({ name: 'B1', sent: 110 });
  });

  it('counts an event at the first instant of the window and not one a millisecond before', async () => {
    const own = await createOrgWithKey(h.stack.orm, { scopes: ['metrics:read'] });
    await seed(h.stack.orm, own.org.id, [
      { at: dayStart(6), domain: mail, counts: { sent: 1 } },
      { at: new Date(dayStart(6).getTime() - 1), domain: mail, counts: { sent: 2 } },
    ]);
    const request = apiClient(h.api.url, own.key);
    const week = (await request('GET', '/api/v1/metrics?period=7d')).body.data as { summary: { sent: number } };
    const fortnight = (await request('GET', '/api/v1/metrics?period=14d')).body.data as { summary: { sent: number } };
    expect(week.summary.sent).toBe(1);
    expect(fortnight.summary.sent).toBe(3);
  });

  it('answers zeros (and zero rates) for a workspace without events or contacts', async () => {
    const empty = await createOrgWithKey(h.stack.orm, { scopes: ['metrics:read'] });
    const response = await apiClient(h.api.url, empty.key)('GET', '/api/v1/metrics');
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const data = response.body.data as Record<string, unknown>;
    expect(data).toEqual({
      summary: { sent: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0, complained: 0, unsubscribed: 0, campaigns: 0 },
      rates: rates0,
      dailyVolume: Array.from({ length: 7 }, (_, i) => ({ date: dateOf(6 - i), sent: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0 })),
      topCampaigns: [],
      contacts: { total: 0, active: 0, unsubscribed: 0, bounced: 0, complained: 0 },
      domains: [],
      period: '7d',
    });
  });

  it.each(['1d', '7', '7D', '365d', '', 'all'])('answers 400 invalid_request for period=%j', async (period) => {
    const response = await h.request('GET', `/api/v1/metrics?period=${encodeURIComponent(period)}`);
    expectError(response, 400, 'invalid_request');
    expect(response.body.error?.details?.fields).toEqual([
      expect.objectContaining({ path: 'period', location: 'query', type: 'picklist' }),
    ]);
  });
});

describe('recordEmailEvent', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(() => h.close());

  it('commits with the surrounding transaction and rolls back with it', async () => {
    const orgId = h.workspace.org.id;
    const em = scopeToOrg(h.stack.orm.em, orgId);
    await em.transactional(async (tx) => {
      await recordEmailEvent(tx, {
        orgId,
        type: 'delivered',
        recipient: 'kept@example.com',
        domain: 'Mail.Example.COM',
        emailId: 'e'.repeat(24),
      });
      await tx.flush();
    });
    await expect(
      em.transactional(async (tx) => {
        await recordEmailEvent(tx, { orgId, type: 'delivered', recipient: 'lost@example.com', domain: 'mail.example.com' });
        await tx.flush();
        throw new Error('the state change failed');
      }),
    ).rejects.toThrow('the state change failed');
    const events = await em.fork().find(EmailEvent, {});
    expect(events.map((e) => [e.recipient, e.domain, e.emailId, e.broadcastId])).toEqual([
      ['kept@example.com', 'mail.example.com', 'e'.repeat(24), null],
    ]);
    expect(Math.abs(events[0]!.occurredAt.getTime() - Date.now())).toBeLessThan(60_000);
  });

  /** The rollup rows of a workspace, and the same figures counted from its email_events. */
  async function rollupAndEvents(orgId: string) {
    const connection = h.stack.orm.em.getConnection();
    const order = 'order by day, broadcast_id, domain, type';
    const rollup = await connection.execute<Record<string, unknown>[]>(
      `select to_char(day, 'YYYY-MM-DD') as day, broadcast_id, domain, type, count::int as count
         from email_event_counts where org_id = ? ${order}`,
      [orgId],
    );
    const events = await connection.execute<Record<string, unknown>[]>(
      `select to_char((occurred_at at time zone 'UTC')::date, 'YYYY-MM-DD') as day, coalesce(broadcast_id, '') as broadcast_id,
              domain, type, count(*)::int as count
         from email_events where org_id = ? group by 1, 2, 3, 4 ${order}`,
      [orgId],
    );
    return { rollup, events };
  }

  it('adds to the daily rollup per UTC day, broadcast and domain, and rolls back with the transaction', async () => {
    const { org } = await createOrgWithKey(h.stack.orm);
    const em = scopeToOrg(h.stack.orm.em, org.id);
    const broadcastId = 'b'.repeat(24);
    const lastInstant = new Date(dayStart(2).getTime() - 1);
    const event = (type: EmailEventType, occurredAt: Date, extra: { broadcastId?: string; domain?: string } = {}) => ({
      orgId: org.id,
      type,
      recipient: `${unique('r')}@example.com`,
      domain: extra.domain ?? 'Mail.Example.COM',
      broadcastId: extra.broadcastId ?? null,
      occurredAt,
    });
    await em.transactional(async (tx) => {
      await recordEmailEvents(tx, [
        event('sent', dayStart(2), { broadcastId }),
        event('sent', lastInstant, { broadcastId }),
        event('sent', dayStart(2), { broadcastId }),
        event('delivered', dayStart(2)),
      ]);
      await recordEmailEvent(tx, event('sent', dayStart(2), { broadcastId, domain: 'mail.example.com' }));
    });
    await expect(
      em.transactional(async (tx) => {
        await recordEmailEvents(tx, [event('sent', dayStart(2), { broadcastId }), event('opened', dayStart(2))]);
        throw new Error('the state change failed');
      }),
    ).rejects.toThrow('the state change failed');

    const { rollup, events } = await rollupAndEvents(org.id);
    expect(rollup).toEqual([
      { day: dateOf(3), broadcast_id: broadcastId, domain: 'mail.example.com', type: 'sent', count: 1 },
      { day: dateOf(2), broadcast_id: '', domain: 'mail.example.com', type: 'delivered', count: 1 },
      { day: dateOf(2), broadcast_id: broadcastId, domain: 'mail.example.com', type: 'sent', count: 3 },
    ]);
    expect(rollup).toEqual(events);
  });

  it('refuses to record outside a transaction (the rollup would drift from the events)', async () => {
    const em = scopeToOrg(h.stack.orm.em, h.workspace.org.id);
    await expect(
      recordEmailEvent(em, { orgId: h.workspace.org.id, type: 'sent', recipient: 'x@example.com', domain: 'mail.example.com' }),
    ).rejects.toThrow(/transaction/);
  });

  it('lets concurrent batches over the same counters commit without deadlocks, with exact totals', async () => {
    const { org } = await createOrgWithKey(h.stack.orm);
    const types: EmailEventType[] = ['sent', 'delivered', 'opened', 'clicked'];
    const domains = ['a.example.com', 'b.example.com', 'c.example.com'];
    const keys = types.flatMap((type) => domains.map((domain) => ({ type, domain })));
    const batches = Array.from({ length: 8 }, (_, b) =>
      Array.from({ length: 60 }, (_, i) => keys[(i * (b % 2 === 0 ? 1 : keys.length - 1) + b) % keys.length]!),
    );
    await Promise.all(
      batches.map((batch) =>
        scopeToOrg(h.stack.orm.em, org.id).transactional((tx) =>
          recordEmailEvents(
            tx,
            batch.map((key) => ({ orgId: org.id, ...key, recipient: `${unique('r')}@example.com`, occurredAt: dayStart(1) })),
          ),
        ),
      ),
    );
    const { rollup, events } = await rollupAndEvents(org.id);
    expect(rollup).toEqual(events);
    expect(rollup.reduce((sum, row) => sum + Number(row.count), 0)).toBe(8 * 60);
  });
});
