import { createTransport, type SentMessageInfo } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Event, InboundMessage, InboxMessage } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { waitFor, type Service } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { startApi, type RunningApi } from '../../src/main-api.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient, type ApiResponse } from '../support/http.ts';
import { spawnWorkerProcess } from '../support/worker-process.ts';
import { startInboundHarness, type InboundHarness } from './inbound-harness.ts';

const DOMAIN = 'burst.example';

/**
 * Bursts over real SMTP drained by the inbound actor running in real worker processes: every
 * message accepted with 250 becomes visible in the inbox API exactly once, also when the worker
 * is killed (SIGKILL) in the middle of the drain.
 */
describe('inbound actor under a burst (real SMTP → smtp → rows → actor in a worker process → API)', () => {
  let h: InboundHarness;
  let api: RunningApi;
  let request: ReturnType<typeof apiClient>;
  let orgId: string;
  const workers: Service[] = [];

  beforeAll(async () => {
    h = await startInboundHarness();
    const workspace = await createOrgWithKey(h.stack.orm, { scopes: ['all'], rateLimitPerMinute: 100_000, burst: 10_000 });
    orgId = workspace.org.id;
    await createDomainsService({ orm: h.stack.orm, encryptionKey: h.stack.config.encryptionKey }).addDomain({
      orgId,
      domain: DOMAIN,
      verified: true,
    });
    api = await startApi(h.stack.config, createLogger('silent'));
    request = apiClient(api.url, workspace.key);
  }, 90_000);

  afterAll(async () => {
    for (const worker of workers) await worker.stop();
    await api?.close();
    await h?.close();
  });

  /** Sends `count` messages over 8 pooled SMTP connections; resolves with their raw message ids. */
  async function sendBurst(tag: string, count: number): Promise<string[]> {
    const transport = createTransport({
      host: '127.0.0.1',
      port: h.smtp.port,
      secure: false,
      ignoreTLS: true,
      pool: true,
      maxConnections: 8,
      maxMessages: Infinity,
    });
    try {
      const infos = await Promise.all(
        Array.from(
          { length: count },
          (_, index) =>
            transport.sendMail({
              from: 'sender@remote.example',
              to: `inbox@${DOMAIN}`,
              subject: `${tag} ${index}`,
              text: `message ${index} of ${tag}`,
              messageId: `<${tag}-${index}@remote.example>`,
            }) as Promise<SentMessageInfo>,
        ),
      );
      return infos.map((info) => {
        const id = /queued as ([a-f0-9]{24})/.exec(info.response ?? '')?.[1];
        expect(id, info.response).toBeDefined();
        return id!;
      });
    } finally {
      transport.close();
    }
  }

  /**
   * Polls GET /inbox/messages as docs/inbox.md tells a client to: follow the stored cursor, and
   * reconcile with an overlapping `updated_after` (a message's updated_at is taken a moment
   * before its write commits, so concurrent ingestions can commit behind a cursor already read
   * past). Resolves once every Message-ID of `tag` has been listed.
   */
  async function visibleInApi(tag: string, count: number): Promise<Set<string>> {
    const seen = new Set<string>();
    let cursor: string | null = null;
    let newestSeen: number | null = null;
    /** Walks the pages of one query; returns the last next_cursor it saw, or null. */
    async function walk(query: string, from: string | null): Promise<string | null> {
      let position = from;
      for (;;) {
        const response: ApiResponse = await request(
          'GET',
          `/api/v1/inbox/messages?limit=100${query}${position ? `&cursor=${position}` : ''}`,
        );
        expect(response.status, JSON.stringify(response.body)).toBe(200);
        const data = response.body.data as { rfc_message_id: string | null; updated_at: string }[];
        for (const message of data) {
          if (message.rfc_message_id?.startsWith(`${tag}-`)) seen.add(message.rfc_message_id);
          newestSeen = Math.max(newestSeen ?? 0, Date.parse(message.updated_at));
        }
        position = (response.body.meta as { pagination: { next_cursor: string | null } }).pagination.next_cursor ?? position;
        if (data.length < 100) return position;
      }
    }
    try {
      await waitFor(
        `${count} messages of ${tag} to be listed by the API`,
        async () => {
          cursor = await walk('', cursor);
          if (seen.size < count && newestSeen !== null) {
            await walk(`&updated_after=${encodeURIComponent(new Date(newestSeen - 5 * 60_000).toISOString())}`, null);
          }
          return seen.size === count ? seen : undefined;
        },
        180_000,
        250,
      );
    } catch (error) {
      throw new Error(`${(error as Error).message} (${seen.size} of ${count} listed)`);
    }
    return seen;
  }

  /** Every raw message ingested, with exactly one inbox message and one email.received each. */
  async function expectIngestedOnce(ids: string[]): Promise<void> {
    const em = h.stack.orm.em.fork();
    const rows = await em.find(InboundMessage, { id: { $in: ids } });
    expect(rows.filter((row) => row.status !== 'ingested').map((row) => `${row.id}: ${row.status} ${row.lastError}`)).toEqual([]);
    const messages = await scopeToOrg(h.stack.orm.em, orgId).find(InboxMessage, { inboundId: { $in: ids } });
    expect(messages).toHaveLength(ids.length);
    expect(new Set(messages.map((message) => message.inboundId)).size).toBe(ids.length);
    const messageIds = new Set(messages.map((message) => message.id));
    const events = (await scopeToOrg(h.stack.orm.em, orgId).find(Event, { type: 'email.received' })).filter((event) =>
      messageIds.has((event.data as { message: { id: string } }).message.id),
    );
    expect(events).toHaveLength(ids.length);
  }

  it('makes all of a burst of 200 messages visible in the inbox API, each once', async () => {
    workers.push(await spawnWorkerProcess(h.stack));
    const ids = await sendBurst('burst', 200);
    expect(new Set(ids).size).toBe(200);
    const seen = await visibleInApi('burst', 200);
    expect(seen.size).toBe(200);
    await expectIngestedOnce(ids);
  }, 300_000);

  it('loses nothing when the worker is killed (SIGKILL) mid-drain: another worker ingests the rest, each once', async () => {
    for (const worker of workers.splice(0)) await worker.stop();
    // Queued while no worker runs, so the kill lands in the middle of one drain.
    const ids = await sendBurst('crash', 200);
    const count = () => h.stack.orm.em.fork().count(InboundMessage, { id: { $in: ids }, status: 'ingested' });

    const first = await spawnWorkerProcess(h.stack);
    workers.push(first);
    await waitFor('the first ingested message of the burst', async () => ((await count()) > 0 ? true : undefined), 90_000, 10);
    first.child.kill('SIGKILL');
    await first.exited;
    const atKill = await count();
    expect(atKill, 'the kill must land mid-drain').toBeLessThan(ids.length);

    workers.push(await spawnWorkerProcess(h.stack));
    const seen = await visibleInApi('crash', 200);
    expect(seen.size).toBe(200);
    // A message the killed worker recorded but had not yet marked ingested is visible already; its
    // raw row is claimed again when its lease lapses (30 s), and the steps finish it without a copy.
    await waitFor(
      'every raw message of the burst marked ingested',
      async () => ((await count()) === ids.length ? true : undefined),
      120_000,
    );
    await expectIngestedOnce(ids);
  }, 400_000);
});
