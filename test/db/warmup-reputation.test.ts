import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Domain, Event } from '../../db/entities/index.ts';
import { newId } from '../../db/ids.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { REPO_ROOT } from '../../src/dev/paths.ts';
import { createDomainQueue } from '../../src/modules/outbound/domain-queue.repo.ts';
import { createReputationService } from '../../src/modules/reputation/reputation.service.ts';
import { domainRefusal } from '../../src/modules/sends/send-checks.ts';
import { findDomainAndSuppressed } from '../../src/modules/sends/suppression.repo.ts';
import { utcDay } from '../../src/modules/sends/sends.fns.ts';
import { createWarmupService } from '../../src/modules/warmup/warmup.service.ts';
import { createOrg } from '../support/factories.ts';
import { addSendingDomain, insertScheduledEmail } from '../support/sending.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

const run = promisify(execFile);
let stack: TestStack;

beforeAll(async () => {
  stack = await createTestStack();
});
afterAll(() => stack?.close());

const sql = (text: string, params: unknown[]) => stack.orm.em.fork().getConnection().execute(text, params);
const DAY_MS = 86_400_000;

/** A broadcast message of `domainId` due a minute ago (the claims' broadcast half). */
async function dueBroadcastMessage(orgId: string, domainId: string): Promise<void> {
  const id = await insertScheduledEmail(stack.orm, orgId);
  await sql(
    `update transactional_emails set domain_id = ?, status = 'queued', scheduled_at = null, next_attempt_at = now() - interval '1 minute',
            broadcast_id = ?, contact_id = ? where id = ? and org_id = ?`,
    [domainId, 'b'.repeat(24), id, id, orgId],
  );
}
/** A one-by-one email of `domainId` due a minute ago: of stream `stream` of kind `kind` (an automation's: broadcast). */
async function dueStreamEmail(orgId: string, domainId: string, stream: string, kind: string): Promise<string> {
  const id = await insertScheduledEmail(stack.orm, orgId);
  await sql(
    `update transactional_emails set domain_id = ?, status = 'queued', scheduled_at = null, next_attempt_at = now() - interval '1 minute',
            stream = ?, stream_kind = ? where id = ? and org_id = ?`,
    [domainId, stream, kind, id, orgId],
  );
  return id;
}
const countToday = (orgId: string, domainId: string, count: number) =>
  sql(
    `insert into domain_daily_sends (domain_id, day, shard, org_id, count) values (?, ?, 0, ?, ?)
     on conflict (domain_id, day, shard) do update set count = excluded.count`,
    [domainId, utcDay(new Date()), orgId, count],
  );
const stranded = async () => (await createDomainQueue(stack.orm).findStranded(5_000, 1_000)).map((d) => d.id);

/** The rollup the warm-up reads: `sent`, `bounced`, `complained` of the domain on `day`. */
async function rollup(orgId: string, domain: string, day: string, counts: Record<string, number>) {
  for (const [type, count] of Object.entries(counts)) {
    await sql(`insert into email_event_counts (org_id, day, broadcast_id, domain, type, count) values (?, ?, '', ?, ?, ?)`, [
      orgId,
      day,
      domain,
      type,
      count,
    ]);
  }
}

describe('automatic warm-up', () => {
  it("gives a new domain day 1's cap of 150 broadcast messages, in the claims and in its warmup view", async () => {
    const { org } = await createOrg(stack.orm);
    const domain = await addSendingDomain(stack.orm, org.id, { warmup: 'new' });
    expect(domain).toMatchObject({ warmupMode: 'new', warmupStep: 0, warmupCap: 150 });
    const view = (await createWarmupService({ orm: stack.orm }).describe(org.id, [domain])).get(domain.id)!;
    expect(view).toMatchObject({ mode: 'new', day: 1, cap_today: 150, effective_cap: 150, next_cap: 250, limits: 'broadcast' });

    await dueBroadcastMessage(org.id, domain.id);
    await countToday(org.id, domain.id, 149);
    expect(await stranded()).toContain(domain.id);
    // 150 counted today (transactional mail included): its broadcast messages wait for tomorrow.
    await countToday(org.id, domain.id, 150);
    expect(await stranded()).not.toContain(domain.id);
  });

  it('advances a step after a healthy day, holds on high bounces, steps back at twice the limit', async () => {
    const { org } = await createOrg(stack.orm);
    const [good, bouncy, awful] = await Promise.all(
      ['good', 'bouncy', 'awful'].map((name) =>
        addSendingDomain(stack.orm, org.id, { warmup: 'new', domain: `${name}-${newId()}.example.com` }),
      ),
    );
    const now = new Date();
    const yesterday = utcDay(new Date(now.getTime() - DAY_MS));
    // Day 3 of the plan (400 a day), judged on yesterday.
    for (const domain of [good!, bouncy!, awful!]) {
      await sql(`update domains set warmup_step = 2, warmup_cap = 400, warmup_evaluated_on = ? where id = ? and org_id = ?`, [
        yesterday,
        domain.id,
        org.id,
      ]);
    }
    await rollup(org.id, good!.domain, yesterday, { sent: 400, bounced: 8, complained: 0 });
    await rollup(org.id, bouncy!.domain, yesterday, { sent: 400, bounced: 20, complained: 0 });
    await rollup(org.id, awful!.domain, yesterday, { sent: 400, bounced: 40, complained: 0 });

    const warmup = createWarmupService({ orm: stack.orm });
    expect(await warmup.evaluateDue(now)).toBeGreaterThanOrEqual(3);
    // Once per day: a second pass decides nothing more for them.
    await warmup.evaluateDue(now);
    const after = async (id: string) => scopeToOrg(stack.orm.em.fork(), org.id).findOneOrFail(Domain, { id });
    expect(await after(good!.id)).toMatchObject({
      warmupStep: 3,
      warmupCap: 700,
      warmupLast: expect.objectContaining({ decision: 'advance' }),
    });
    expect(await after(bouncy!.id)).toMatchObject({
      warmupStep: 2,
      warmupCap: 400,
      warmupLast: expect.objectContaining({ decision: 'hold' }),
    });
    expect(await after(awful!.id)).toMatchObject({
      warmupStep: 1,
      warmupCap: 250,
      warmupLast: expect.objectContaining({ decision: 'step_back' }),
    });
    const view = (await warmup.describe(org.id, [await after(bouncy!.id)])).get(bouncy!.id)!;
    expect(view.last_evaluation).toMatchObject({ decision: 'hold', bounce_rate: 0.05, sent: 400 });
    expect(String(view.last_evaluation!.reason)).toMatch(/bounces 5 % \(limit 4 %\)/);
  });

  it("takes a domain's own plan, and stops with mode off", async () => {
    const { org } = await createOrg(stack.orm);
    const domain = await addSendingDomain(stack.orm, org.id, { warmup: 'new' });
    const warmup = createWarmupService({ orm: stack.orm });
    expect(await warmup.updateDomainWarmup(org.id, domain.id, { plan: { new_domain: [20, 40] } })).toMatchObject({
      cap_today: 20,
      days: 2,
    });
    expect(await warmup.updateDomainWarmup(org.id, domain.id, { mode: 'off' })).toMatchObject({
      mode: 'off',
      cap_today: null,
      effective_cap: null,
    });
  });
});

describe('workspace reputation policy', () => {
  it('pauses broadcasts past its thresholds with an event, lets transactional mail go, and an operator resumes it', async () => {
    const { org } = await createOrg(stack.orm);
    const domain = await addSendingDomain(stack.orm, org.id);
    await dueBroadcastMessage(org.id, domain.id);
    expect(await stranded()).toContain(domain.id);
    const now = new Date();
    const events = (type: string, count: number) =>
      Array.from({ length: count }, (_, i) => [
        newId(),
        org.id,
        type,
        `r${i}@example.net`,
        domain.domain,
        new Date(now.getTime() - 60_000),
        now,
      ]);
    const rows = [...events('sent', 300), ...events('bounced', 30)];
    await sql(
      `insert into email_events (id, org_id, type, recipient, domain, occurred_at, created_at) values ${rows.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
      rows.flat(),
    );

    const reputation = createReputationService({ orm: stack.orm });
    expect(await reputation.evaluate(now)).toBeGreaterThanOrEqual(1);
    const status = await reputation.status(org.id);
    expect(status.paused_at).not.toBeNull();
    expect(status.pause).toMatchObject({ scope: 'broadcast', sent: 300, bounce_rate: 0.1 });
    const paused = await scopeToOrg(stack.orm.em.fork(), org.id).find(Event, { type: 'workspace.reputation_paused' });
    expect(paused).toHaveLength(1);
    expect(paused[0]!.data).toMatchObject({ scope: 'broadcast', reason: expect.stringMatching(/bounce rate 10 %/) });
    // Broadcast messages wait; a transactional send is still accepted.
    expect(await stranded()).not.toContain(domain.id);
    // So do automation sends and other broadcast-kind stream mail: nothing due the reconciler should wake the domain for.
    const automationEmail = await dueStreamEmail(org.id, domain.id, 'broadcast', 'broadcast');
    const customBulk = await dueStreamEmail(org.id, domain.id, 'product-news', 'broadcast');
    expect(await stranded()).not.toContain(domain.id);
    const receipt = await dueStreamEmail(org.id, domain.id, 'transactional', 'transactional');
    expect(await stranded()).toContain(domain.id);
    const queue = createDomainQueue(stack.orm);
    expect((await queue.claim(org.id, domain.id, 10, 600)).map((e) => e.id)).toEqual([receipt]);
    // The receipt's lease runs ten minutes; the held mail is looked at again within a minute, not at once.
    const nextDue = await queue.nextDue(org.id, domain.id);
    expect(nextDue).toBeGreaterThan(Date.now() + 30_000);
    expect(nextDue).toBeLessThan(Date.now() + 300_000);
    const checked = await findDomainAndSuppressed(stack.orm.em.fork(), org.id, domain.domain, [], 'transactional');
    expect(checked.domain?.workspacePause).toBe('broadcast');
    expect(domainRefusal(checked.domain!, domain.domain)).toBeNull();

    const env = { ...process.env, ...stack.env, HERALD_DATA_DIR: mkdtempSync(join(tmpdir(), 'herald-cli-')) };
    const cli = join(REPO_ROOT, 'src/cli/herald.mjs');
    const resumed = await run(process.execPath, [cli, 'admin', 'reputation', 'resume', '--org', org.id, '--json'], { env, cwd: REPO_ROOT });
    expect(JSON.parse(resumed.stdout)).toMatchObject({ org_id: org.id, resumed_by: 'operator', scope: 'broadcast' });
    const again = await run(process.execPath, [cli, 'admin', 'reputation', 'resume', '--org', org.id, '--json'], {
      env,
      cwd: REPO_ROOT,
    }).catch((error: { code: number; stdout: string }) => error);
    expect('code' in again && again.code).not.toBe(0);

    expect((await reputation.status(org.id)).paused_at).toBeNull();
    expect(await stranded()).toContain(domain.id);
    expect(await queue.nextDue(org.id, domain.id)).toBeLessThan(Date.now());
    const resumedClaim = (await queue.claim(org.id, domain.id, 10, 600)).map((e) => e.id);
    expect(resumedClaim).toEqual(expect.arrayContaining([automationEmail, customBulk]));
    expect(resumedClaim).toHaveLength(3);
    expect(await scopeToOrg(stack.orm.em.fork(), org.id).count(Event, { type: 'workspace.reputation_resumed' })).toBe(1);
    // The window starts again at the resume: the same bounces do not pause it again.
    await reputation.evaluate(new Date());
    expect((await reputation.status(org.id)).paused_at).toBeNull();
  });

  it('refuses new sends too when the policy pauses everything', async () => {
    const { org } = await createOrg(stack.orm);
    const domain = await addSendingDomain(stack.orm, org.id);
    await sql(`update organizations set reputation_paused_at = now(), reputation_pause = '{"scope":"all"}'::jsonb where id = ?`, [org.id]);
    const checked = await findDomainAndSuppressed(stack.orm.em.fork(), org.id, domain.domain, [], 'transactional');
    expect(domainRefusal(checked.domain!, domain.domain)?.details).toMatchObject({ reason: 'WORKSPACE_REPUTATION_PAUSED' });
  });
});
