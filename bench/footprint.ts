/**
 * 7. Footprint: resident memory (VmRSS from /proc/<pid>/status) of the api, worker and smtp
 * processes and of a Temporal dev server of its own (so earlier benchmarks' workflows do not
 * weigh on it), idle (a few seconds after the previous activity)
 * and at the peak under load, against a bare Node process that does nothing.
 *
 * The load, all at once for the run's duration: contact list reads (25 connections) and
 * contact creations (5 connections) on the api, each creation fanned out as a webhook
 * delivery by the worker to a receiver on 127.0.0.1, and 3 SMTP sessions at a time (EHLO,
 * MAIL, RCPT to a workspace domain, DATA, QUIT) on the smtp listener, each accepted message
 * ingested by the worker once the inbound pipeline takes it.
 */
import { WebhookEndpoint } from '../db/entities/index.ts';
import { createOrm } from '../db/orm.ts';
import { encryptSecret } from '../src/crypto/secret-box.ts';
import { startWebhookReceiver } from '../test/support/webhook-receiver.ts';
import { LIST_PATH } from './api-read.ts';
import type { BenchContext } from './lib/context.ts';
import { runHttpLoad } from './lib/load.ts';
import { peakRss, rssMb } from './lib/proc.ts';
import { seedContacts, seedDomains } from './lib/seed.ts';
import { smtpLoad } from './lib/smtp-load.ts';
import { fmt, med } from './lib/stats.ts';
import type { Benchmark, Summary } from './lib/types.ts';

const PROCESSES = ['api', 'worker', 'smtp', 'temporal'] as const;
const INBOUND_DOMAIN = 'inbound.bench.test';
const SETTLE_MS = 3000;

export const benchmark: Benchmark = {
  name: 'footprint',
  description:
    'VmRSS of the api, worker, smtp and Temporal dev server processes, idle and at the peak under a mixed load (reads, writes fanned out as webhook deliveries, SMTP sessions), against a bare Node process.',
  needsTemporal: 'own',

  async setup(context: BenchContext) {
    const databaseUrl = await context.database();
    const workspace = await context.workspace(databaseUrl);
    await seedContacts(databaseUrl, workspace.orgId, 5_000);
    await seedDomains(databaseUrl, workspace.orgId, [INBOUND_DOMAIN]);
    const receiver = await startWebhookReceiver();
    context.defer(() => receiver.close());
    const orm = await createOrm({ databaseUrl, poolMax: 1 });
    try {
      const em = orm.em.fork();
      em.setFilterParams('tenant', { orgId: workspace.orgId });
      em.create(WebhookEndpoint, {
        orgId: workspace.orgId,
        name: 'footprint',
        url: receiver.url('/footprint'),
        description: '',
        events: ['contact.created'],
        enabled: true,
        secretEncrypted: encryptSecret(Buffer.from(context.services.encryptionKey, 'base64'), 'whsec_footprint'),
        keyMode: 'test',
        disabledReason: null,
        disabledAt: null,
      });
      await em.flush();
    } finally {
      await orm.close();
    }

    const env = await context.env(databaseUrl);
    const api = await context.start('api', env);
    const worker = await context.start('worker', env);
    const smtp = await context.start('smtp', env);
    const temporal = await context.temporal();
    const bare = await context.spawnNode(
      'bare-node',
      ['-e', 'console.log("bare node ready"); setInterval(() => {}, 60_000)'],
      'bare node ready',
    );
    const pids = { api: api.pid, worker: worker.pid, smtp: smtp.pid, temporal: temporal.pid };

    const authorization = `Bearer ${workspace.key}`;
    const load = (durationSec: number) =>
      Promise.all([
        runHttpLoad({ url: `${api.url}${LIST_PATH}`, headers: { Authorization: authorization }, connections: 25, durationSec }),
        runHttpLoad({
          url: `${api.url}/api/v1/contacts`,
          method: 'POST',
          headers: { Authorization: authorization, 'Content-Type': 'application/json', 'Idempotency-Key': 'footprint-[<id>]' },
          body: JSON.stringify({ email: 'footprint-[<id>]@example.com' }),
          uniqueIds: true,
          connections: 5,
          durationSec,
        }),
        smtpLoad(smtp.port, `someone@${INBOUND_DOMAIN}`, 3, durationSec),
      ]);

    return {
      async warmup() {
        await load(context.options.warmupSec);
      },
      async run() {
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
        const idle = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, rssMb(pid)]));
        const peak = await peakRss(pids, load(context.options.durationSec));
        const bareMb = rssMb(bare.pid);
        const figures: Record<string, number> = { bare_node_mb: bareMb };
        for (const name of PROCESSES) {
          figures[`${name}_idle_mb`] = idle[name]!;
          figures[`${name}_load_mb`] = peak[name]!;
          figures[`${name}_ratio`] = peak[name]! / bareMb;
        }
        return figures;
      },
      close: () => Promise.resolve(),
    };
  },

  summarize(stats) {
    return PROCESSES.map((name): Summary => ({
      name: `footprint-${name}`,
      figure: `idle ${fmt(med(stats, `${name}_idle_mb`))} MB, under load ${fmt(med(stats, `${name}_load_mb`))} MB`,
      ratio: med(stats, `${name}_ratio`),
      baseline: `a bare Node process, ${fmt(med(stats, 'bare_node_mb'))} MB`,
    }));
  },
};
