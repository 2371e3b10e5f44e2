import { createTransport } from 'nodemailer';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TransactionalEmail } from '../../db/entities/index.ts';
import { migrateUp } from '../../db/migrate.ts';
import { ALL_TENANTS, createOrm, type MikroORM } from '../../db/orm.ts';
import { loadConfig } from '../../src/config.ts';
import { ensureDatabase, withDatabase } from '../../src/dev/postgres.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { startApi, type RunningApi } from '../../src/main-api.ts';
import { startSmtp } from '../../src/main-smtp.ts';
import type { RunningSmtp } from '../../src/smtp/inbound-server.ts';
import { idem } from '../support/api.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient, type ApiResponse } from '../support/http.ts';
import { startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

/**
 * PostgreSQL restarted under load (issue 35 item 5), on a cluster of the test's own: the run's
 * shared server serves the other test files meanwhile. Lanes of clients send and read without
 * pause while the server is stopped (fast, then immediate) and started again. Every answer is
 * 200/202 or 503 service_unavailable with Retry-After, never a 500; SMTP answers 4xx meanwhile;
 * each outage is one warning and one "back" line in the log, with no stack; acceptance resumes
 * on the same process and every accepted send is in the database afterwards.
 */

const LANES = 6;

interface Outcome {
  kind: 'send' | 'read';
  status: number;
  retryAfter: string | null;
  body: ApiResponse['body'];
}

describe('PostgreSQL restarted under load', () => {
  let pg: PrivatePostgres;
  let stack: TestStack;
  let orm: MikroORM;
  let api: RunningApi;
  let apiOrm: MikroORM;
  let smtpOrm: MikroORM;
  let smtp: RunningSmtp;
  let key: string;
  let domain: string;
  const lines: string[] = [];
  const outcomes: Outcome[] = [];
  const accepted: string[] = [];
  let loading = true;
  let load: Promise<void>;

  beforeAll(async () => {
    pg = await startPrivatePostgres();
    const databaseUrl = withDatabase(pg.serverUrl, 'herald');
    await ensureDatabase(databaseUrl);
    orm = await createOrm({ databaseUrl, poolMax: 2 });
    await migrateUp(orm);
    // Redis and Temporal of the run; PostgreSQL of this test.
    stack = await createTestStack({ SEND_HANDOFF_WAIT_MS: '0' });
    const env = { ...stack.env, DATABASE_URL: databaseUrl, BLOB_DIR: '' };
    const config = loadConfig(env);
    const logger = createLogger('info', {}, (line) => lines.push(line));
    const workspace = await createOrgWithKey(orm, { scopes: ['all'], rateLimitPerMinute: 1_000_000, burst: 100_000 });
    key = workspace.key;
    domain = (await addSendingDomain(orm, workspace.org.id, { domain: 'blink.example.com' })).domain;
    await setCredits(orm, workspace.org.id, 1_000_000);
    apiOrm = await createOrm({ databaseUrl, poolMax: 5 });
    api = await startApi(config, logger.child({ process: 'api' }), { orm: apiOrm });
    smtpOrm = await createOrm({ databaseUrl, poolMax: 5 });
    smtp = await startSmtp(config, logger.child({ process: 'smtp' }), { blobs: null, orm: smtpOrm });
    const request = apiClient(api.url, key);
    const record = (kind: Outcome['kind'], response: ApiResponse) => {
      outcomes.push({ kind, status: response.status, retryAfter: response.headers.get('retry-after'), body: response.body });
      if (kind === 'send' && response.status === 202) accepted.push((response.body.data as { _id: string })._id);
      // A client that honours Retry-After would wait; a short pause keeps the lanes from spinning.
      return response.status === 503 ? new Promise((resolve) => setTimeout(resolve, 50)) : undefined;
    };
    load = Promise.all(
      Array.from({ length: LANES }, async (_, lane) => {
        while (loading) {
          const body = { from: `Blink <blink@${domain}>`, to: `lane${lane}@example.com`, subject: 'Blink', text: 'Hello' };
          await record('send', await request('POST', '/api/v1/outbox/emails', { body, headers: idem() }));
          await record('read', await request('GET', '/api/v1/contacts?limit=50'));
        }
      }),
    ).then(() => undefined);
  }, 120_000);

  afterAll(async () => {
    loading = false;
    await load?.catch(() => {});
    await smtp?.close();
    await api?.close();
    await apiOrm?.close();
    await smtpOrm?.close();
    await orm?.close();
    await stack?.close();
    await pg?.destroy();
  });

  const servedSince = (mark: number, status: number, kind: Outcome['kind']) =>
    outcomes.slice(mark).filter((o) => o.status === status && o.kind === kind).length;

  /** A 4xx SMTP reply (nodemailer's responseCode) from the inbound MX or the submission port while PostgreSQL is down. */
  async function smtpReplyCode(port: number, auth?: { user: string; pass: string }): Promise<number | undefined> {
    const transport = createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, ...(auth ? { auth } : {}) });
    try {
      await transport.sendMail({ from: `blink@${domain}`, to: `someone@${domain}`, subject: 'Blink', text: 'Hello' });
      return 250;
    } catch (error) {
      return (error as { responseCode?: number }).responseCode;
    } finally {
      transport.close();
    }
  }

  for (const mode of ['fast', 'immediate'] as const) {
    it(`answers 503 with Retry-After while PostgreSQL is stopped (${mode}) and accepts again once it is back`, async () => {
      await waitFor('sends accepted before the stop', () => Promise.resolve(servedSince(0, 202, 'send') >= 10 || undefined), 30_000);
      const stopped = outcomes.length;
      await pg.stop(mode);
      await waitFor(
        '503s to sends and reads',
        () => Promise.resolve((servedSince(stopped, 503, 'send') >= 5 && servedSince(stopped, 503, 'read') >= 5) || undefined),
        30_000,
      );
      expect(await smtpReplyCode(smtp.port)).toBe(451);
      const submission = await smtpReplyCode(smtp.submissionPort!, { user: 'herald', pass: key });
      expect(submission, 'submission answers a temporary failure').toBeGreaterThanOrEqual(400);
      expect(submission).toBeLessThan(500);
      const restarted = outcomes.length;
      await pg.start();
      await waitFor('acceptance to resume', () => Promise.resolve(servedSince(restarted, 202, 'send') >= 10 || undefined), 60_000);
      await waitFor('reads to resume', () => Promise.resolve(servedSince(restarted, 200, 'read') >= 10 || undefined), 60_000);
      // The api's probe (once a second) logs the outage's end; requests may succeed just before it runs.
      const backLines = () => lines.filter((l) => l.includes('"process":"api"') && l.includes('PostgreSQL back after')).length;
      await waitFor(
        'the outage to be logged as over',
        () => Promise.resolve(backLines() >= (mode === 'fast' ? 1 : 2) || undefined),
        30_000,
      );
    }, 180_000);
  }

  it('never answered anything but 200/202 or 503 service_unavailable with Retry-After', async () => {
    loading = false;
    await load;
    const unexpected = outcomes.filter((o) => !(o.status === 503 || o.status === (o.kind === 'send' ? 202 : 200)));
    expect(unexpected.map((o) => `${o.kind} ${o.status} ${JSON.stringify(o.body)}`)).toEqual([]);
    const refused = outcomes.filter((o) => o.status === 503);
    expect(refused.length).toBeGreaterThan(0);
    for (const o of refused) {
      expect(o.body.error?.code, JSON.stringify(o.body)).toBe('service_unavailable');
      expect((o.body.error?.details as { reason?: string } | undefined)?.reason).toBe('DATABASE_UNAVAILABLE');
      expect(o.retryAfter, JSON.stringify(o.body)).toMatch(/^[1-9]\d*$/);
    }
  });

  // A connection left checked out would also make the pool's end() (process shutdown) wait forever.
  for (const [name, of] of [
    ['api', () => apiOrm],
    ['smtp', () => smtpOrm],
  ] as const) {
    it(`has every connection of the ${name} back in its pool (none left checked out by a failed request)`, async () => {
      const pool: pg.Pool = await of().driver.getConnection().getNativeClient();
      await waitFor(
        `the ${name} pool's connections to be idle`,
        () => Promise.resolve((pool.waitingCount === 0 && pool.idleCount === pool.totalCount) || undefined),
        10_000,
      ).catch(() => {});
      expect({ waiting: pool.waitingCount, idle: pool.idleCount }).toEqual({ waiting: 0, idle: pool.totalCount });
    });
  }

  it('lost nothing it accepted', async () => {
    expect(accepted.length).toBeGreaterThan(40);
    const stored = await orm.em.fork().count(TransactionalEmail, { id: { $in: accepted } }, ALL_TENANTS);
    expect(stored).toBe(new Set(accepted).size);
  });

  it('logged each outage once (unavailable, then back), without a stack per request', () => {
    const entries = lines.map((line) => JSON.parse(line) as { level: string; msg: string; process?: string; stack?: unknown });
    const apiLines = entries.filter((e) => e.process === 'api');
    expect(apiLines.filter((e) => e.msg.startsWith('PostgreSQL unavailable since ')).length).toBe(2);
    expect(apiLines.filter((e) => /^PostgreSQL back after \d+(\.\d+)? s$/.test(e.msg)).length).toBe(2);
    expect(entries.filter((e) => e.level === 'error').map((e) => e.msg)).toEqual([]);
    expect(lines.filter((line) => line.includes('"stack"'))).toEqual([]);
    const smtpLines = entries.filter((e) => e.process === 'smtp' && e.msg.startsWith('PostgreSQL unavailable since '));
    expect(smtpLines.length).toBeGreaterThan(0);
    expect(smtpLines.length).toBeLessThanOrEqual(2);
  });
});
