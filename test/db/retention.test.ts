import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ContactImport,
  EmailRecipient,
  InboundMessage,
  TrackingHit,
  TransactionalEmail,
  type EmailStatus,
} from '../../db/entities/index.ts';
import { newId } from '../../db/ids.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import type { BlobStore } from '../../src/blob/blob-store.ts';
import { createFsBlobStore } from '../../src/blob/fs-blob-store.ts';
import { readStats } from '../../src/modules/automations/automation-stats.repo.ts';
import { countBroadcastEvents } from '../../src/modules/broadcasts/broadcast-send.repo.ts';
import { recordEmailEvents } from '../../src/modules/metrics/email-events.ts';
import { createMetricsService } from '../../src/modules/metrics/metrics.service.ts';
import { createLogger } from '../../src/logger.ts';
import { metricsRegistry } from '../../src/metrics/metrics.ts';
import { startLoop } from '../../src/queue/background-loop.ts';
import { createRetentionLoop, runRetention, type RetentionPolicy } from '../../src/modules/retention/retention.ts';
import { insertStatShard } from '../support/automation-rows.ts';
import { createOrg } from '../support/factories.ts';
import { insertAttachment, insertMessage, insertThread } from '../support/inbox-rows.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';
import { insertDelivery } from '../support/webhook-rows.ts';

const DAY = 86_400_000;
const NOW = new Date();
/** An id of a record created `days` ago. */
const idAgo = (days: number) => newId(new Date(NOW.getTime() - days * DAY));
const policy = (days: Partial<RetentionPolicy['days']> = {}, batchSize = 1000): RetentionPolicy => ({
  days: { emails: 30, webhooks: 30, inbound: 30, contactImports: 30, ...days },
  batchSize,
});

describe('retention (RETENTION_*_DAYS)', () => {
  let stack: TestStack;
  let blobDir: string;
  let blobs: BlobStore;
  let orgId: string;

  const sql = <T = Record<string, unknown>>(text: string, params: unknown[] = []) => stack.orm.em.fork().execute<T[]>(text, params);
  const exists = async (table: string, id: string) => (await sql(`select 1 from ${table} where id = ?`, [id])).length === 1;
  const run = (p: RetentionPolicy, onBatch?: (table: string, deleted: number) => void) =>
    runRetention({ orm: stack.orm, blobs, policy: p }, { now: NOW, ...(onBatch ? { onBatch } : {}) });

  /** An email with one recipient, created `ageDays` ago; `events` are recorded through the pipeline's writer (rollup included). */
  async function insertEmail(ageDays: number, status: EmailStatus, options: { events?: number; broadcastId?: string } = {}) {
    const em = scopeToOrg(stack.orm.em, orgId);
    const id = idAgo(ageDays);
    const settled = ['sent', 'failed', 'cancelled'].includes(status);
    em.create(TransactionalEmail, {
      id,
      orgId,
      domainId: newId(),
      domain: 'retention.example.com',
      fromEmail: 'from@retention.example.com',
      subject: 'Kept or not',
      text: 'Hello',
      messageId: `${id}.0@retention.example.com`,
      status,
      broadcastId: options.broadcastId ?? null,
      quotaDay: NOW.toISOString().slice(0, 10),
      nextAttemptAt: settled ? null : NOW,
      createdAt: NOW,
      updatedAt: NOW,
    });
    em.create(EmailRecipient, { orgId, emailId: id, kind: 'to', email: 'to@example.com', createdAt: NOW, updatedAt: NOW });
    em.create(TrackingHit, {
      id: idAgo(ageDays),
      orgId,
      emailId: id,
      broadcastId: options.broadcastId ?? newId(),
      kind: 'open',
      state: 'counted',
      at: NOW,
    });
    await em.flush();
    const events = Array.from({ length: options.events ?? 1 }, () => ({
      orgId,
      type: 'delivered' as const,
      recipient: 'to@example.com',
      domain: 'retention.example.com',
      emailId: id,
      broadcastId: options.broadcastId ?? null,
      occurredAt: new Date(NOW.getTime() - 10 * DAY),
    }));
    const written = await stack.orm.em.fork().transactional((tx) => recordEmailEvents(tx, events));
    // Events are written after their email: dated like it, a second on.
    for (const event of written) await sql('update email_events set id = ? where id = ?', [idAgo(ageDays - 1 / 86_400), event.id]);
    return id;
  }

  const eventCount = async (emailId: string) =>
    Number((await sql<{ n: number }>('select count(*)::int as n from email_events where email_id = ?', [emailId]))[0]!.n);

  beforeAll(async () => {
    stack = await createTestStack();
    blobDir = mkdtempSync(join(tmpdir(), 'herald-retention-'));
    blobs = createFsBlobStore(blobDir);
    orgId = (await createOrg(stack.orm)).org.id;
  });

  afterAll(async () => {
    await stack.close();
    rmSync(blobDir, { recursive: true, force: true });
  });

  it('deletes settled emails past the period with their recipients, events and hits; keeps unsettled and recent ones, and the metrics', async () => {
    const broadcastId = newId();
    const automationId = newId();
    await insertStatShard(stack.orm, orgId, automationId, 0, { total_runs: 3, emails_sent: 2 });
    const oldSent = await insertEmail(31, 'sent', { events: 2, broadcastId });
    const oldFailed = await insertEmail(40, 'failed');
    const oldQueued = await insertEmail(31, 'queued');
    const oldScheduled = await insertEmail(35, 'scheduled');
    const recentSent = await insertEmail(29, 'sent');
    const orphanEvent = idAgo(31);
    await sql(
      `insert into email_events (id, org_id, type, email_id, broadcast_id, recipient, domain, occurred_at, created_at)
       values (?, ?, 'unsubscribed', null, null, 'x@example.com', 'retention.example.com', now(), now())`,
      [orphanEvent, orgId],
    );

    const metrics = createMetricsService({ orm: stack.orm, clock: () => NOW });
    const before = {
      metrics: await metrics.getMetricsWithDailyOutcomes(orgId, '30d'),
      broadcast: await countBroadcastEvents(stack.orm.em.fork(), orgId, [broadcastId]),
      automation: await readStats(stack.orm.em.fork(), orgId, [automationId]),
    };
    expect(before.metrics.daily.reduce((sum, day) => sum + day.delivered, 0)).toBe(6);

    const deleted = await run(policy());
    expect(deleted).toMatchObject({ transactional_emails: 2, email_events: 1 });

    for (const gone of [oldSent, oldFailed]) {
      expect(await exists('transactional_emails', gone)).toBe(false);
      expect(await stack.orm.em.fork().count(EmailRecipient, { emailId: gone }, ALL_TENANTS)).toBe(0);
      expect(await stack.orm.em.fork().count(TrackingHit, { emailId: gone }, ALL_TENANTS)).toBe(0);
      expect(await eventCount(gone)).toBe(0);
    }
    for (const kept of [oldQueued, oldScheduled, recentSent]) {
      expect(await exists('transactional_emails', kept)).toBe(true);
      expect(await stack.orm.em.fork().count(EmailRecipient, { emailId: kept }, ALL_TENANTS)).toBe(1);
      expect(await eventCount(kept)).toBe(1);
    }
    expect(await exists('email_events', orphanEvent)).toBe(false);

    expect(await metrics.getMetricsWithDailyOutcomes(orgId, '30d')).toEqual(before.metrics);
    expect(await countBroadcastEvents(stack.orm.em.fork(), orgId, [broadcastId])).toEqual(before.broadcast);
    expect(before.broadcast.get(broadcastId)).toEqual({ delivered: 2 });
    expect(await readStats(stack.orm.em.fork(), orgId, [automationId])).toEqual(before.automation);
  });

  it('deletes settled deliveries with their attempts and then their events; keeps deliveries in retry, recent ones and unfanned events', async () => {
    /** A delivery (and its event) dated `ageDays` back. */
    async function agedDelivery(ageDays: number, status: 'delivered' | 'exhausted' | 'failed') {
      const delivery = await insertDelivery(stack.orm, orgId, { status, attempts: 2 });
      const [eventId, deliveryId] = [idAgo(ageDays), idAgo(ageDays)];
      await sql('update events set id = ?, fanned_out_at = now() where id = ?', [eventId, delivery.eventId]);
      await sql('update webhook_deliveries set id = ?, event_id = ? where id = ?', [deliveryId, eventId, delivery.id]);
      await sql('update webhook_attempts set delivery_id = ? where delivery_id = ?', [deliveryId, delivery.id]);
      return { eventId, deliveryId };
    }
    const delivered = await agedDelivery(31, 'delivered');
    const exhausted = await agedDelivery(60, 'exhausted');
    const retrying = await agedDelivery(31, 'failed');
    const recent = await agedDelivery(29, 'delivered');
    const unfanned = idAgo(31);
    await sql(
      `insert into events (id, org_id, type, api_version, data, created_at) values (?, ?, 'contact.created', '1.0.0', '{}', now())`,
      [unfanned, orgId],
    );

    expect(await run(policy())).toMatchObject({ webhook_deliveries: 2, events: 2 });

    for (const gone of [delivered, exhausted]) {
      expect(await exists('webhook_deliveries', gone.deliveryId)).toBe(false);
      expect(await exists('events', gone.eventId)).toBe(false);
      expect(await sql('select 1 from webhook_attempts where delivery_id = ?', [gone.deliveryId])).toHaveLength(0);
    }
    for (const kept of [retrying, recent]) {
      expect(await exists('webhook_deliveries', kept.deliveryId)).toBe(true);
      expect(await exists('events', kept.eventId)).toBe(true);
      expect(await sql('select 1 from webhook_attempts where delivery_id = ?', [kept.deliveryId])).toHaveLength(2);
    }
    expect(await exists('events', unfanned)).toBe(true);
  });

  it('deletes inbound and inbox messages with their raw bytes and attachments; threads count what is left, empty ones go', async () => {
    async function inbound(ageDays: number, status: 'received' | 'ingested' | 'failed') {
      const id = idAgo(ageDays);
      const blobKey = `inbound/raw/${id}.eml`;
      await blobs.put(blobKey, Buffer.from('Subject: hi\r\n\r\nbody\r\n'));
      const em = stack.orm.em.fork();
      em.create(InboundMessage, { id, blobKey, sizeBytes: 22, sha256: 'x'.repeat(64), status, createdAt: NOW, updatedAt: NOW });
      await em.flush();
      return { id, blobKey };
    }
    const oldIngested = await inbound(31, 'ingested');
    const oldFailed = await inbound(31, 'failed');
    const oldReceived = await inbound(40, 'received');
    const recent = await inbound(29, 'ingested');

    const shared = await insertThread(stack.orm, orgId, { messageCount: 2 });
    const alone = await insertThread(stack.orm, orgId, { messageCount: 1 });
    const oldInShared = await insertMessage(stack.orm, orgId, { id: idAgo(31), threadId: shared.id });
    const recentInShared = await insertMessage(stack.orm, orgId, { id: idAgo(29), threadId: shared.id });
    const oldAlone = await insertMessage(stack.orm, orgId, { id: idAgo(31), threadId: alone.id, direction: 'outbound' });
    const oldPending = await insertMessage(stack.orm, orgId, { id: idAgo(31), attachmentIngestStatus: 'pending', attachmentsReady: false });
    const goneFile = await insertAttachment(stack.orm, orgId, { messageId: oldInShared.id, blobs });
    const keptFile = await insertAttachment(stack.orm, orgId, { messageId: recentInShared.id, blobs });

    expect(await run(policy())).toMatchObject({ inbox_messages: 2, inbound_messages: 2 });

    for (const gone of [oldIngested, oldFailed]) {
      expect(await exists('inbound_messages', gone.id)).toBe(false);
      expect(await blobs.exists(gone.blobKey)).toBe(false);
    }
    for (const kept of [oldReceived, recent]) {
      expect(await exists('inbound_messages', kept.id)).toBe(true);
      expect(await blobs.exists(kept.blobKey)).toBe(true);
    }
    expect(await exists('inbox_messages', oldInShared.id)).toBe(false);
    expect(await exists('inbox_messages', oldAlone.id)).toBe(false);
    expect(await exists('inbox_messages', recentInShared.id)).toBe(true);
    expect(await exists('inbox_messages', oldPending.id)).toBe(true);
    expect(await exists('inbox_attachments', goneFile.id)).toBe(false);
    expect(await blobs.exists(goneFile.blobKey!)).toBe(false);
    expect(await blobs.exists(keptFile.blobKey!)).toBe(true);
    expect(await sql('select message_count from inbox_threads where id = ?', [shared.id])).toEqual([{ message_count: 1 }]);
    expect(await exists('inbox_threads', alone.id)).toBe(false);
  });

  it('deletes finished contact imports with their file and error report; keeps running and recent ones', async () => {
    async function contactImport(ageDays: number, status: 'importing' | 'completed' | 'failed') {
      const id = idAgo(ageDays);
      const blobKey = `imports/${orgId}/${id}.csv`;
      await blobs.put(blobKey, Buffer.from('email\nx@example.com\n'));
      const em = scopeToOrg(stack.orm.em, orgId);
      em.create(ContactImport, { id, orgId, status, blobKey, uploadExpiresAt: NOW, createdAt: NOW, updatedAt: NOW });
      await em.flush();
      await sql(
        `insert into contact_import_errors (import_id, row, org_id, line, email, reason, message) values (?, 1, ?, 2, '', 'invalid_email', 'bad')`,
        [id, orgId],
      );
      return { id, blobKey };
    }
    const completed = await contactImport(31, 'completed');
    const failed = await contactImport(45, 'failed');
    const running = await contactImport(31, 'importing');
    const recent = await contactImport(29, 'completed');

    expect(await run(policy())).toMatchObject({ contact_imports: 2 });

    for (const gone of [completed, failed]) {
      expect(await exists('contact_imports', gone.id)).toBe(false);
      expect(await sql('select 1 from contact_import_errors where import_id = ?', [gone.id])).toHaveLength(0);
      expect(await blobs.exists(gone.blobKey)).toBe(false);
    }
    for (const kept of [running, recent]) {
      expect(await exists('contact_imports', kept.id)).toBe(true);
      expect(await sql('select 1 from contact_import_errors where import_id = ?', [kept.id])).toHaveLength(1);
      expect(await blobs.exists(kept.blobKey)).toBe(true);
    }
  });

  it('deletes in transactions of at most the batch size, until a batch comes back short', async () => {
    const ids = Array.from({ length: 25 }, () => idAgo(50));
    await sql(
      `insert into email_events (id, org_id, type, recipient, domain, occurred_at, created_at)
       select id, ?, 'sent', 'b@example.com', 'retention.example.com', now(), now() from jsonb_array_elements_text(?::jsonb) as id`,
      [orgId, JSON.stringify(ids)],
    );
    const batches: number[] = [];
    await run(policy({}, 10), (table, deleted) => {
      if (table === 'email_events') batches.push(deleted);
    });
    expect(batches).toEqual([10, 10, 5]);
    expect(await sql('select 1 from email_events where id in (?)', [ids])).toHaveLength(0);
  });

  it('keeps a kind forever when its period is 0 (off), while the others are swept', async () => {
    const kept = await insertEmail(400, 'sent');
    const delivery = await insertDelivery(stack.orm, orgId, { status: 'delivered' });
    const oldDelivery = idAgo(400);
    await sql('update webhook_deliveries set id = ? where id = ?', [oldDelivery, delivery.id]);

    const deleted = await run(policy({ emails: 0 }));
    expect(deleted).not.toHaveProperty('transactional_emails');
    expect(deleted).not.toHaveProperty('email_events');
    expect(await exists('transactional_emails', kept)).toBe(true);
    expect(await eventCount(kept)).toBe(1);
    expect(await exists('webhook_deliveries', oldDelivery)).toBe(false);
    expect(deleted.webhook_deliveries).toBe(1);
  });

  it("runs as the worker's loop: a pass deletes what is past its period and logs it", async () => {
    const old = idAgo(100);
    await sql(
      `insert into email_events (id, org_id, type, recipient, domain, occurred_at, created_at)
       values (?, ?, 'sent', 'loop@example.com', 'retention.example.com', now(), now())`,
      [old, orgId],
    );
    const lines: string[] = [];
    const logger = createLogger('info', {}, (line) => lines.push(line));
    const loop = startLoop(createRetentionLoop({ orm: stack.orm, blobs, policy: policy(), logger }), { logger });
    try {
      await loop.poke();
      expect(await exists('email_events', old)).toBe(false);
      expect(lines.some((line) => line.includes('retention deleted expired records'))).toBe(true);
      expect(await metricsRegistry.getSingleMetricAsString('herald_retention_deleted_total')).toMatch(
        /herald_retention_deleted_total\{table="email_events"\} [1-9]/,
      );
    } finally {
      await loop.stop();
    }
  });

  it('deletes expired idempotency records, and dashboard sessions and invitations 30 days after they ended', async () => {
    const daysAgo = (days: number) => new Date(NOW.getTime() - days * DAY);
    const session = async (ageDays: number, expiresAt: Date, revokedAt: Date | null = null) => {
      const id = idAgo(ageDays);
      await sql(
        `insert into dashboard_sessions (id, org_id, user_id, token_hash, csrf_token, created_at, last_seen_at, expires_at, revoked_at)
         values (?, ?, ?, ?, 'csrf', now(), now(), ?, ?)`,
        [id, orgId, newId(), newId() + newId(), expiresAt, revokedAt],
      );
      return id;
    };
    const expiredLongAgo = await session(60, daysAgo(31));
    const signedOutLongAgo = await session(60, daysAgo(-1), daysAgo(45));
    const expiredRecently = await session(60, daysAgo(29));
    const live = await session(60, daysAgo(-5));
    const invite = idAgo(40);
    await sql(
      `insert into dashboard_invites (id, org_id, email, role, kind, token_hash, created_at, expires_at)
       values (?, ?, 'new@example.com', 'member', 'invite', ?, now(), ?)`,
      [invite, orgId, newId() + newId(), daysAgo(33)],
    );
    const record = async (expiresAt: Date) => {
      const id = newId();
      await sql(
        `insert into idempotency_records (id, org_id, api_key_id, key, fingerprint, state, created_at, expires_at)
         values (?, ?, ?, ?, 'f', 'completed', now(), ?)`,
        [id, orgId, newId(), id, expiresAt],
      );
      return id;
    };
    const expiredRecord = await record(new Date(NOW.getTime() - 60_000));
    const liveRecord = await record(new Date(NOW.getTime() + 3_600_000));

    expect(await run(policy())).toMatchObject({ dashboard_sessions: 2, dashboard_invites: 1, idempotency_records: 1 });
    for (const gone of [expiredLongAgo, signedOutLongAgo]) expect(await exists('dashboard_sessions', gone)).toBe(false);
    for (const kept of [expiredRecently, live]) expect(await exists('dashboard_sessions', kept)).toBe(true);
    expect(await exists('dashboard_invites', invite)).toBe(false);
    expect(await exists('idempotency_records', expiredRecord)).toBe(false);
    expect(await exists('idempotency_records', liveRecord)).toBe(true);
  });
});
