import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@temporalio/client';
import { Domain, Event } from '../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { runAdmin, type AdminDeps } from '../../src/cli/admin.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { dkimDnsValue } from '../../src/modules/domains/dkim.fns.ts';
import { domainVerifyWorkflowId } from '../../src/modules/domains/domain-verification.starter.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import { createTrackingDomains } from '../../src/modules/tracking/tracking-domains.service.ts';
import { createDnsResolver } from '../../src/dns/resolver.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { domainRecheckScheduleId } from '../../src/temporal/schedules.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { startApi } from '../../src/main-api.ts';
import { signedInPerson } from '../support/dashboard-client.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { createOrg } from '../support/factories.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

interface RecordJson {
  type: string;
  name: string;
  value: string;
  required: boolean;
  status: string;
  found: string | null;
}
interface CheckJson {
  id: string;
  org_id: string;
  domain: string;
  status: string;
  previous_status: string;
  verified: boolean;
  checked_at: string;
  records: Record<'spf' | 'dkim' | 'dmarc' | 'return_path', RecordJson>;
}

const SPF_INCLUDE = 'spf.herald.test';
const BOUNCE_DOMAIN = 'bounces.herald.test';

describe('domain verification through the real worker and a loopback DNS server', () => {
  let stack: TestStack;
  let dns: TestDnsServer;
  let temporal: TemporalClientHandle;
  let client: Client;
  let worker: RunningWorker;
  let domains: ReturnType<typeof createDomainsService>;
  let orgId: string;
  const logger = createLogger('warn');
  const tld = `p${process.pid}.example`;

  /** `herald admin …` in-process; the ORM is the test's, so `close` is neutralised. */
  async function admin(argv: string[], config: AdminDeps['config'] = stack.config) {
    const result = await runAdmin(argv, () =>
      Promise.resolve({ orm: Object.assign(Object.create(stack.orm) as typeof stack.orm, { close: async () => {} }), config }),
    );
    return {
      ...result,
      json: argv.includes('--json') && result.stdout ? (JSON.parse(result.stdout) as CheckJson & { error?: { code: string } }) : undefined,
    };
  }

  async function verify(domainId: string): Promise<CheckJson> {
    const result = await admin(['domain', 'verify', domainId, '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout.trim().split('\n')).toHaveLength(1);
    return result.json!;
  }

  /** Publishes the records a domain needs (DMARC only when asked: it is recommended, not required). */
  function publish(domain: Domain, options: { dmarc?: boolean } = {}) {
    dns.set(domain.domain, {
      TXT: ['some-site-verification=1', `v=spf1 include:${SPF_INCLUDE} ~all`],
      MX: [{ exchange: 'mx.example.net', priority: 10 }],
    });
    dns.set(`herald._domainkey.${domain.domain}`, { TXT: [dkimDnsValue(domain.dkimPublicKey)] });
    dns.set(`bounces.${domain.domain}`, { CNAME: BOUNCE_DOMAIN });
    if (options.dmarc) dns.set(`_dmarc.${domain.domain}`, { TXT: ['v=DMARC1; p=reject'] });
  }

  async function stored(domainId: string): Promise<Domain> {
    return stack.orm.em.fork().findOneOrFail(Domain, { id: domainId }, ALL_TENANTS);
  }

  async function domainEvents(org: string) {
    const rows = await scopeToOrg(stack.orm.em, org).find(
      Event,
      { type: { $in: ['domain.verified', 'domain.attention'] } },
      { orderBy: { createdAt: 'asc', id: 'asc' } },
    );
    return rows.map((e) => ({
      type: e.type,
      domainId: (e.data.domain as { _id: string })._id,
      previous: e.data.previous_status,
      data: e.data,
    }));
  }

  beforeAll(async () => {
    installTemporalLogging(logger);
    dns = await startDnsServer();
    stack = await createTestStack({ DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '300', SPF_INCLUDE, BOUNCE_DOMAIN });
    temporal = await connectTemporalClient(stack.config);
    client = temporal.client;
    domains = createDomainsService({ orm: stack.orm, encryptionKey: stack.config.encryptionKey });
    orgId = (await createOrg(stack.orm)).org.id;
    worker = await startWorker(stack.config, logger);
  });

  afterAll(async () => {
    await worker?.shutdown();
    for await (const schedule of client.schedule.list()) {
      if (schedule.scheduleId.startsWith(`${stack.config.temporal.schedulePrefix}-`)) {
        await client.schedule
          .getHandle(schedule.scheduleId)
          .delete()
          .catch(() => {});
      }
    }
    await temporal.close();
    await stack.close();
    await dns.close();
  });

  it('a name another workspace holds verified stays pending here, even with every record published for both', async () => {
    const other = (await createOrg(stack.orm)).org.id;
    const held = await domains.addDomain({ orgId: other, domain: `shared.${tld}` });
    const late = await domains.addDomain({ orgId, domain: `shared.${tld}` });
    publish(held);
    dns.set(`herald._domainkey.${held.domain}`, { TXT: [dkimDnsValue(held.dkimPublicKey), dkimDnsValue(late.dkimPublicKey)] });
    expect(await verify(held.id)).toMatchObject({ status: 'verified' });
    expect(await verify(late.id)).toMatchObject({ previous_status: 'pending', status: 'pending', verified: false });
    expect((await stored(late.id)).status).toBe('pending');
    expect((await domainEvents(orgId)).filter((e) => e.domainId === late.id)).toEqual([]);
  });

  it('pending stays pending while records are missing, then turns verified when they are published', async () => {
    const domain = await domains.addDomain({ orgId, domain: `lifecycle.${tld}` });
    await domains.addSender({ domainId: domain.id, email: `hello@lifecycle.${tld}`, name: 'Hello' });

    const before = await verify(domain.id);
    expect(before).toMatchObject({
      id: domain.id,
      org_id: orgId,
      domain: `lifecycle.${tld}`,
      previous_status: 'pending',
      status: 'pending',
      verified: false,
    });
    for (const key of ['spf', 'dkim', 'dmarc', 'return_path'] as const)
      expect(before.records[key]).toMatchObject({ status: 'missing', found: null });
    expect(await domainEvents(orgId)).toEqual([]);

    publish(domain);
    const after = await verify(domain.id);
    expect(after).toMatchObject({ previous_status: 'pending', status: 'verified', verified: true });
    expect(after.records).toEqual({
      spf: {
        type: 'TXT',
        name: `lifecycle.${tld}`,
        value: `v=spf1 include:${SPF_INCLUDE} ~all`,
        required: true,
        status: 'verified',
        found: `v=spf1 include:${SPF_INCLUDE} ~all`,
      },
      dkim: {
        type: 'TXT',
        name: `herald._domainkey.lifecycle.${tld}`,
        value: dkimDnsValue(domain.dkimPublicKey),
        required: true,
        status: 'verified',
        found: dkimDnsValue(domain.dkimPublicKey),
      },
      dmarc: { type: 'TXT', name: `_dmarc.lifecycle.${tld}`, value: 'v=DMARC1; p=none', required: false, status: 'missing', found: null },
      return_path: {
        type: 'CNAME',
        name: `bounces.lifecycle.${tld}`,
        value: BOUNCE_DOMAIN,
        required: true,
        status: 'verified',
        found: BOUNCE_DOMAIN,
      },
    });

    const row = await stored(domain.id);
    expect(row.status).toBe('verified');
    expect(row.verifiedAt?.toISOString()).toBe(after.checked_at);
    expect(row.lastCheckedAt?.toISOString()).toBe(after.checked_at);
    expect(row.dnsCheck).toMatchObject({ spf: { status: 'verified' }, dmarc: { status: 'missing' } });

    const events = await domainEvents(orgId);
    expect(events.map((e) => [e.type, e.domainId, e.previous])).toEqual([['domain.verified', domain.id, 'pending']]);
    expect(events[0]!.data.domain).toMatchObject({
      _id: domain.id,
      verified: true,
      deliverability: { status: 'verified', spf: { status: 'verified' } },
      sender_options: [{ email: `hello@lifecycle.${tld}`, verified: true }],
    });

    const again = await verify(domain.id);
    expect(again).toMatchObject({ previous_status: 'verified', status: 'verified' });
    expect(await domainEvents(orgId)).toHaveLength(1);
  });

  it('carries HeraldOrgId and HeraldKind, under the id domain-verify:<domainId>', async () => {
    const domain = await domains.addDomain({ orgId, domain: `visible.${tld}` });
    await verify(domain.id);
    const query = `HeraldOrgId = '${orgId}' AND HeraldKind = 'domain-verify' AND WorkflowId = '${domainVerifyWorkflowId(domain.id)}'`;
    const runs = await waitFor(
      'the verification to be visible by search attributes',
      async () => {
        const found = [];
        for await (const run of client.workflow.list({ query })) found.push(run);
        return found.length > 0 ? found : undefined;
      },
      30_000,
    );
    expect(runs[0]).toMatchObject({ type: 'verifyDomain', taskQueue: stack.config.temporal.taskQueue });
  });

  it('changes nothing while DNS does not answer: records unknown, status kept', async () => {
    const domain = await domains.addDomain({ orgId, domain: `outage.${tld}` });
    publish(domain, { dmarc: true });
    expect((await verify(domain.id)).status).toBe('verified');
    const eventsBefore = await domainEvents(orgId);

    dns.setSilent(true);
    try {
      const during = await verify(domain.id);
      expect(during).toMatchObject({ previous_status: 'verified', status: 'verified' });
      for (const key of ['spf', 'dkim', 'dmarc', 'return_path'] as const)
        expect(during.records[key]).toMatchObject({ status: 'unknown', found: null });
      const row = await stored(domain.id);
      expect(row.status).toBe('verified');
      expect(row.lastCheckedAt?.toISOString()).toBe(during.checked_at);
    } finally {
      dns.setSilent(false);
    }
    expect(await domainEvents(orgId)).toEqual(eventsBefore);
  });

  it('verified → attention when a required record disappears, → verified when it is back', async () => {
    const domain = await domains.addDomain({ orgId, domain: `flaky.${tld}` });
    publish(domain);
    expect((await verify(domain.id)).status).toBe('verified');
    const firstVerifiedAt = (await stored(domain.id)).verifiedAt;

    dns.remove(`herald._domainkey.${domain.domain}`);
    const broken = await verify(domain.id);
    expect(broken).toMatchObject({ previous_status: 'verified', status: 'attention', verified: false });
    expect(broken.records.dkim).toMatchObject({ status: 'missing', found: null });
    expect(broken.records.spf.status).toBe('verified');

    dns.set(`herald._domainkey.${domain.domain}`, { TXT: ['v=DKIM1; k=rsa; p=QUJD'] });
    const wrongKey = await verify(domain.id);
    expect(wrongKey).toMatchObject({ previous_status: 'attention', status: 'attention' });
    expect(wrongKey.records.dkim).toMatchObject({ status: 'mismatch', found: 'v=DKIM1; k=rsa; p=QUJD' });

    publish(domain);
    const fixed = await verify(domain.id);
    expect(fixed).toMatchObject({ previous_status: 'attention', status: 'verified' });
    expect((await stored(domain.id)).verifiedAt!.getTime()).toBeGreaterThan(firstVerifiedAt!.getTime());

    const events = (await domainEvents(orgId)).filter((e) => e.domainId === domain.id);
    expect(events.map((e) => [e.type, e.previous])).toEqual([
      ['domain.verified', 'pending'],
      ['domain.attention', 'verified'],
      ['domain.verified', 'attention'],
    ]);
    expect(events[1]!.data.domain).toMatchObject({ verified: false, deliverability: { status: 'attention', dkim: { status: 'missing' } } });
  });

  it('checks a domain from the dashboard ("Check now"): the same run, the page showing what it found; another workspace\'s domain is not found', async () => {
    const api = await startApi(stack.config, logger);
    try {
      const domain = await domains.addDomain({ orgId, domain: `dashboard.${tld}` });
      const { client: browser } = await signedInPerson(stack.orm, api.url, orgId, { email: `checker-${process.pid}@example.com` });
      const pending = await browser.get(`/dashboard/domains/${domain.id}`);
      expect(pending.text).toContain('Check now');
      publish(domain);
      const checked = await browser.submit(`/dashboard/domains/${domain.id}`, `/dashboard/domains/${domain.id}/check`, {});
      expect(checked.status, checked.text.slice(0, 300)).toBe(303);
      expect((await stored(domain.id)).status).toBe('verified');
      const page = await browser.get(checked.headers.get('location')!);
      expect(page.text).toContain('Checked just now: verified.');

      const { org: other } = await createOrg(stack.orm);
      const foreign = await domains.addDomain({ orgId: other.id, domain: `foreign.${tld}` });
      const refused = await browser.submit(`/dashboard/domains/${domain.id}`, `/dashboard/domains/${foreign.id}/check`, {});
      expect(refused.status).toBe(404);
      expect((await stored(foreign.id)).lastCheckedAt).toBeNull();
    } finally {
      await api.close();
    }
  });

  it('prints the new status and each record as text', async () => {
    const domain = await domains.addDomain({ orgId, domain: `text.${tld}` });
    const result = await admin(['domain', 'verify', domain.id]);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).toContain(`domain ${domain.id} (text.${tld}): pending -> pending`);
    expect(result.stdout).toMatch(/^spf +yes +missing +TXT +text\./m);
    expect(result.stdout).toMatch(/^dmarc +no +missing +TXT +_dmarc\.text\./m);
    expect(result.stdout).toContain(`return_path: CNAME bounces.text.${tld} ${BOUNCE_DOMAIN}`);
  });

  it.each([
    [['domain', 'verify'], 2, 'usage', /usage: herald admin domain verify ID/],
    [['domain', 'verify', 'not-an-id'], 2, 'usage', /24-character hexadecimal/],
    [['domain', 'verify', '0123456789abcdef01234567', '--timeout', '0'], 2, 'usage', /--timeout must be at least 1/],
    [['domain', 'verify', '0123456789abcdef01234567'], 1, 'not_found', /does not exist/],
  ])('admin %j exits %i (%s)', async (argv, exitCode, code, message) => {
    const result = await admin([...argv, '--json']);
    expect(result.exitCode).toBe(exitCode);
    expect(result.json).toMatchObject({ error: { code } });
    expect(result.stderr).toMatch(message);
  });

  it('gives up waiting when no worker polls, leaving the run queued', async () => {
    const domain = await domains.addDomain({ orgId, domain: `unpolled.${tld}` });
    const unpolled = { ...stack.config.temporal, taskQueue: `${stack.config.temporal.taskQueue}-nobody` };
    const result = await admin(['domain', 'verify', domain.id, '--timeout', '1', '--json'], { ...stack.config, temporal: unpolled });
    expect(result.exitCode).toBe(1);
    expect(result.json).toMatchObject({ error: { code: 'service_unavailable' } });
    expect(result.stderr).toMatch(/is a worker polling/);
    const handle = client.workflow.getHandle(domainVerifyWorkflowId(domain.id));
    expect((await handle.describe()).status.name).toBe('RUNNING');
    await handle.terminate('test cleanup');
  });

  it('re-checks verified and attention domains daily through a Schedule, leaving pending ones alone', async () => {
    const schedule = await client.schedule.getHandle(domainRecheckScheduleId(stack.config)).describe();
    expect(schedule.action).toMatchObject({
      type: 'startWorkflow',
      workflowType: 'recheckDomains',
      taskQueue: stack.config.temporal.taskQueue,
    });
    expect(schedule.spec.intervals).toMatchObject([{ every: 86_400_000 }]);

    const otherOrg = (await createOrg(stack.orm)).org.id;
    const drifting = await domains.addDomain({ orgId, domain: `drifting.${tld}` });
    const steady = await domains.addDomain({ orgId: otherOrg, domain: `steady.${tld}` });
    const pending = await domains.addDomain({ orgId, domain: `waiting.${tld}` });
    for (const domain of [drifting, steady]) {
      publish(domain);
      expect((await verify(domain.id)).status).toBe('verified');
    }
    publish(pending);
    dns.set(drifting.domain, { TXT: ['v=spf1 -all'] });
    // Tracking hosts: steady's verified now and gone by the re-check, drifting's published only after it was set.
    const tracking = createTrackingDomains({
      orm: stack.orm,
      dns: createDnsResolver(stack.config),
      publicUrl: stack.config.http.publicUrl,
    });
    const heraldHost = new URL(stack.config.http.publicUrl).hostname;
    dns.set(`track.${steady.domain}`, { CNAME: heraldHost });
    expect((await tracking.setHost(otherOrg, steady.id, `track.${steady.domain}`)).trackingVerifiedAt).not.toBeNull();
    expect((await tracking.setHost(orgId, drifting.id, `track.${drifting.domain}`)).trackingVerifiedAt).toBeNull();
    dns.set(`track.${steady.domain}`, { CNAME: 'elsewhere.example.net' });
    dns.set(`track.${drifting.domain}`, { CNAME: heraldHost });
    const due = await stack.orm.em.fork().count(Domain, { status: { $in: ['verified', 'attention'] } }, ALL_TENANTS);
    const steadyCheckedAt = (await stored(steady.id)).lastCheckedAt!;

    await client.schedule.getHandle(domainRecheckScheduleId(stack.config)).trigger();
    const runs = await waitFor(
      'the re-check run to complete',
      async () => {
        const found = [];
        const query = `WorkflowType = 'recheckDomains' AND TaskQueue = '${stack.config.temporal.taskQueue}' AND ExecutionStatus = 'Completed'`;
        for await (const run of client.workflow.list({ query })) found.push(run);
        return found.length > 0 ? found : undefined;
      },
      90_000,
    );
    expect(await client.workflow.getHandle(runs[0]!.workflowId, runs[0]!.runId).result()).toEqual({
      checked: due,
      changed: 1,
      failed: 0,
      skipped: 0,
    });

    expect((await stored(drifting.id)).status).toBe('attention');
    expect((await stored(drifting.id)).dnsCheck).toMatchObject({ spf: { status: 'mismatch', found: 'v=spf1 -all' } });
    expect((await stored(steady.id)).status).toBe('verified');
    expect((await stored(steady.id)).lastCheckedAt!.getTime()).toBeGreaterThan(steadyCheckedAt.getTime());
    const waiting = await stored(pending.id);
    expect([waiting.status, waiting.lastCheckedAt]).toEqual(['pending', null]);
    expect((await domainEvents(orgId)).filter((e) => e.domainId === drifting.id).map((e) => e.type)).toEqual([
      'domain.verified',
      'domain.attention',
    ]);
    // The tracking hosts were checked again too: each changed status once, with its event.
    expect((await stored(drifting.id)).trackingVerifiedAt).not.toBeNull();
    expect(await stored(steady.id)).toMatchObject({ trackingVerifiedAt: null, trackingFound: 'elsewhere.example.net' });
    const trackingEvents = async (org: string, domainId: string) =>
      (
        await scopeToOrg(stack.orm.em, org).find(
          Event,
          { type: { $in: ['domain.tracking_verified', 'domain.tracking_attention'] } },
          { orderBy: { createdAt: 'asc', id: 'asc' } },
        )
      )
        .filter((e) => (e.data.tracking as { domain_id: string }).domain_id === domainId)
        .map((e) => [e.type, e.data.previous_status, (e.data.tracking as { status: string }).status]);
    expect(await trackingEvents(orgId, drifting.id)).toEqual([['domain.tracking_verified', 'pending', 'verified']]);
    expect(await trackingEvents(otherOrg, steady.id)).toEqual([
      ['domain.tracking_verified', 'pending', 'verified'],
      ['domain.tracking_attention', 'verified', 'pending'],
    ]);

    const children = [];
    for await (const run of client.workflow.list({ query: `HeraldOrgId = '${otherOrg}' AND HeraldKind = 'domain-verify'` }))
      children.push(run);
    expect(children.length).toBeGreaterThanOrEqual(1);
  }, 180_000);
});
