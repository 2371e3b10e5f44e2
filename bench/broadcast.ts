/**
 * 10. Broadcasts: a 100,000-recipient broadcast through real `herald api` and `herald worker`
 * processes (bench/broadcast-one-process.ts: one `herald all` process, as `npm start` runs
 * Herald), the Temporal dev server and a counting relay (bench/lib/counting-relay.ts, in this process).
 *
 * Setup seeds 106,250 contacts (1 in 17 unsubscribed: 100,000 eligible; `--quick`: a tenth) and
 * one `all` segment. Each run:
 * 1. drafts and launches a broadcast over the API (subject and HTML personalised per contact);
 *    from the launch's 202 to the last of its messages at the relay: messages/s; meanwhile
 * 2. transactional sends at 10/s over the API, each timed from its 202 to its message at the
 *    relay (the domain's actor serves them first), and the RSS of the api and worker sampled;
 * 3. baseline: plain pooled nodemailer (same pool size as the worker), each message DKIM-signed
 *    with an RSA-2048 key as Herald signs them, 20,000 messages (2,000 with `--quick`) to the
 *    same relay, 50 in flight.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import nodemailer from 'nodemailer';
import type { BenchContext, HeraldProcess } from './lib/context.ts';
import { startCountingRelay } from './lib/counting-relay.ts';
import { cpuAccount, peakRss, postgresOf } from './lib/proc.ts';
import { seedContacts, withClient } from './lib/seed.ts';
import { sendingWorkspace } from './lib/sending.ts';
import { fmt, med, quantile } from './lib/stats.ts';
import type { Benchmark } from './lib/types.ts';

const POOL = 5;
const TRANSACTIONAL_RATE = 10;
const TIMELINE_STEP_S = 30;

/** Arrivals per step as `from–to s: count (rate/s)` lines: whether the rate holds or falls as the queue drains. */
function timeline(offsetsMs: number[]): string {
  const counts: number[] = [];
  for (const offset of offsetsMs) {
    const step = Math.floor(offset / 1000 / TIMELINE_STEP_S);
    counts[step] = (counts[step] ?? 0) + 1;
  }
  return Array.from(
    counts,
    (count = 0, step) => `${step * TIMELINE_STEP_S}–${(step + 1) * TIMELINE_STEP_S} s: ${count} (${fmt(count / TIMELINE_STEP_S)}/s)`,
  ).join('\n');
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How Herald runs in the benchmark: api and worker processes (production's shape), or one process for all. */
export type HeraldShape = 'split' | 'one-process';

/** A Herald process of the run: its name in the figures, pid and metrics port. */
interface Member {
  name: string;
  pid: number;
  metricsPort: number;
}

export const benchmark = broadcastBenchmark('split');

export function broadcastBenchmark(shape: HeraldShape): Benchmark {
  const suffix = shape === 'split' ? '' : '-one-process';
  return {
    name: `broadcast${suffix}`,
    description:
      shape === 'split'
        ? 'A 100,000-recipient broadcast: launch to last message at the relay, messages/s against plain pooled DKIM-signing nodemailer; peak RSS of the api and worker; 202-to-relay p99 of transactional sends (10/s) meanwhile.'
        : "The broadcast benchmark with Herald as one process (api, worker and smtp: `herald all`, as `npm start` runs it): messages/s, the process's peak RSS, transactional p99.",
    needsTemporal: true,

    async setup(context: BenchContext) {
      const eligible = context.options.quick ? 10_000 : 100_000;
      const baselineCount = context.options.quick ? 2_000 : 20_000;
      const { databaseUrl, workspace, domain } = await sendingWorkspace(context);
      const sink = await startCountingRelay();
      context.defer(() => sink.close());
      await seedContacts(databaseUrl, workspace.orgId, Math.ceil((eligible * 17) / 16));
      const [{ active }] = await withClient(
        databaseUrl,
        async (client) =>
          (
            await client.query<{ active: number }>(`select count(*)::int as active from contacts where org_id = $1 and status = 'active'`, [
              workspace.orgId,
            ])
          ).rows as [{ active: number }],
      );

      const relayEnv = {
        SMTP_RELAY_URL: `smtp://127.0.0.1:${sink.port}`,
        SMTP_RELAY_FINAL_HOP: 'true',
        SMTP_RELAY_POOL_SIZE: String(POOL),
        BLOB_DIR: '',
      };
      const started = async (kind: 'worker' | 'api' | 'all', profile: boolean): Promise<{ process: HeraldProcess; member: Member }> => {
        const metricsPort = await context.freePort();
        const process = await context.start(kind, await context.env(databaseUrl, { ...relayEnv, METRICS_PORT: String(metricsPort) }), {
          profile,
        });
        return { process, member: { name: kind === 'all' ? 'herald' : kind, pid: process.pid, metricsPort } };
      };
      type Started = Awaited<ReturnType<typeof started>>;
      const [sender, api]: [Started, Started] =
        shape === 'split'
          ? [await started('worker', true), await started('api', false)]
          : await started('all', true).then((one) => [one, one]);
      const members = shape === 'split' ? [api.member, sender.member] : [sender.member];
      /** The worker's send-step histograms: seconds spent and count per step (claim, build, relay, record). */
      async function sendSteps(): Promise<Map<string, { sum: number; count: number }>> {
        const text = await (await fetch(`http://127.0.0.1:${sender.member.metricsPort}/metrics`)).text();
        const steps = new Map<string, { sum: number; count: number }>();
        for (const [, kind, step, value] of text.matchAll(/^herald_send_step_seconds_(sum|count)\{step="(\w+)"\} (\S+)$/gm)) {
          const entry = steps.get(step!) ?? { sum: 0, count: 0 };
          entry[kind as 'sum' | 'count'] = Number(value);
          steps.set(step!, entry);
        }
        return steps;
      }
      /** Where a process's memory is (its Prometheus process metrics, main thread's V8 heap only), MB. */
      async function memoryOf(port: number): Promise<string> {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        const mb = (name: string) => fmt(Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN) / 1048576);
        return `RSS ${mb('herald_process_resident_memory_bytes')}, V8 heap ${mb('herald_nodejs_heap_size_used_bytes')} used of ${mb('herald_nodejs_heap_size_total_bytes')}, external ${mb('herald_nodejs_external_memory_bytes')}`;
      }
      const memory = async () => (await Promise.all(members.map(async (m) => `${m.name}: ${await memoryOf(m.metricsPort)}`))).join('\n');
      const temporal = await context.temporal();
      const dkimKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      const headers = { Authorization: `Bearer ${workspace.key}`, 'Content-Type': 'application/json' };

      async function call(method: string, path: string, body: unknown): Promise<Record<string, unknown>> {
        const response = await fetch(`${api.process.url}${path}`, {
          method,
          headers: { ...headers, 'Idempotency-Key': `bench-${randomBytes(8).toString('hex')}` },
          body: JSON.stringify(body),
        });
        const json = (await response.json()) as { data?: Record<string, unknown> };
        if (response.status >= 300 || !json.data) throw new Error(`${method} ${path} answered ${response.status}: ${JSON.stringify(json)}`);
        return json.data;
      }

      const segment = await call('POST', '/api/v1/segments', { name: 'Everyone', tags: [] });
      const fromBounces = `@bounces.${domain}`;
      const isBroadcastMessage = (m: { mailFrom: string; rcptTo: string[] }) =>
        m.mailFrom.endsWith(fromBounces) && (m.rcptTo[0]?.startsWith('contact') ?? false);
      /** Broadcast messages at the relay since the last clear, counted incrementally (the list only grows). */
      let counted = 0;
      let seen = 0;
      const broadcastCount = () => {
        const all = sink.arrivals();
        for (; seen < all.length; seen += 1) if (isBroadcastMessage(all[seen]!)) counted += 1;
        return counted;
      };

      async function broadcastOnce(label: string) {
        sink.clear();
        counted = 0;
        seen = 0;
        const draft = await call('POST', '/api/v1/outbox/broadcasts', {
          name: `Bench ${label}`,
          subject: 'News for {{first_name}}',
          preview_text: 'The benchmark newsletter',
          from_name: 'Bench',
          from_email: `news@${domain}`,
          segment_ids: [segment._id],
          html: '<html><body><h1>Hello {{first_name}} {{last_name}}</h1><p>Your plan: {{plan}}. News of the week from {{company}}.</p></body></html>',
          plain_text: 'Hello {{first_name}}, your plan: {{plan}}.',
        });
        const cpu = cpuAccount({
          ...Object.fromEntries(members.map((m) => [m.name, m.pid])),
          temporal: temporal.pid,
          postgres: postgresOf(databaseUrl),
          bench: 'this',
        });
        const stepsBefore = await sendSteps();
        const memoryBefore = await memory();
        const launchedAt = Date.now();
        await call('POST', `/api/v1/outbox/broadcasts/${String(draft._id)}/send`, {});

        // Transactional sends meanwhile, at a steady rate until the broadcast is done.
        const answeredAt = new Map<string, number>();
        let done = false;
        const transactional = (async () => {
          for (let i = 0; !done; i += 1) {
            const started = Date.now();
            const sent = await call('POST', '/api/v1/outbox/emails', {
              from: `Shop <shop@${domain}>`,
              to: `tx-${label}-${i}@simulator.herald.test`,
              subject: 'Receipt',
              text: 'Thanks.',
            });
            answeredAt.set(String(sent.message_id), Date.now());
            await sleep(Math.max(0, 1000 / TRANSACTIONAL_RATE - (Date.now() - started)));
          }
        })();
        const finished = (async () => {
          const deadline = launchedAt + 1_800_000;
          while (broadcastCount() < active && Date.now() < deadline) await sleep(500);
          done = true;
          await transactional;
        })();
        const rss = await peakRss(Object.fromEntries(members.map((m) => [m.name, m.pid])), finished);
        const arrivals = sink.arrivals();
        const arrived = arrivals.filter(isBroadcastMessage);
        const last = arrived.reduce((latest, m) => Math.max(latest, m.receivedAt), 0);
        const seconds = (last - launchedAt) / 1000;
        const [written] = await withClient(
          databaseUrl,
          async (client) =>
            (
              await client.query<{ audience_s: number | null }>(
                `select extract(epoch from audience_written_at - sending_at)::float8 as audience_s from broadcasts where id = $1 and org_id = $2`,
                [draft._id, workspace.orgId],
              )
            ).rows,
        );
        const stepsAfter = await sendSteps();
        context.note(
          `broadcast ${label}: memory (MB) before the launch and after the last message`,
          `before:\n${memoryBefore}\nafter:\n${await memory()}`,
        );
        context.note(
          `broadcast ${label}: the worker's send steps (herald_send_step_seconds)`,
          [...stepsAfter]
            .map(([step, after]) => {
              const before = stepsBefore.get(step) ?? { sum: 0, count: 0 };
              const count = after.count - before.count;
              return `${step}: ${count} times, mean ${fmt(((after.sum - before.sum) / Math.max(1, count)) * 1000)} ms, total ${fmt(after.sum - before.sum)} s`;
            })
            .join('\n'),
        );
        context.note(
          `broadcast ${label}: messages at the relay per ${TIMELINE_STEP_S} s from the launch`,
          timeline(arrived.map((m) => m.receivedAt - launchedAt)),
        );
        const latencies = arrivals
          .filter((m) => m.messageId !== null && answeredAt.has(m.messageId))
          .map((m) => m.receivedAt - answeredAt.get(m.messageId as string)!)
          .sort((a, b) => a - b);
        return {
          arrived: arrived.length,
          seconds,
          rate: arrived.length / seconds,
          audienceSeconds: written?.audience_s ?? Number.NaN,
          rss,
          latencies,
          transactionalSent: answeredAt.size,
          cpu: cpu.perUnit(arrived.length),
        };
      }

      async function plainNodemailer(count: number): Promise<number> {
        const transport = nodemailer.createTransport({
          pool: true,
          host: '127.0.0.1',
          port: sink.port,
          maxConnections: POOL,
          maxMessages: 1000,
          dkim: { domainName: domain, keySelector: 'herald', privateKey: dkimKey },
        });
        let next = 0;
        const started = performance.now();
        await Promise.all(
          Array.from({ length: 50 }, async () => {
            while (next < count) {
              next += 1;
              await transport.sendMail({
                from: `news@${domain}`,
                to: `plain-${next}@example.com`,
                subject: 'News for First',
                html: '<html><body><h1>Hello First Last</h1><p>Your plan: pro.</p></body></html>',
                text: 'Hello First, your plan: pro.',
              });
            }
          }),
        );
        transport.close();
        sink.clear();
        return count / ((performance.now() - started) / 1000);
      }

      return {
        async warmup() {
          await plainNodemailer(200);
        },
        async run(index) {
          const sent = await broadcastOnce(`run${index}`);
          const plain = await plainNodemailer(baselineCount);
          return {
            recipients: active,
            arrived: sent.arrived,
            launch_to_last_s: sent.seconds,
            audience_written_s: sent.audienceSeconds,
            broadcast_per_s: sent.rate,
            plain_nodemailer_per_s: plain,
            ratio_of_plain: sent.rate / plain,
            ...Object.fromEntries(members.map((m) => [`rss_${m.name}_mb`, sent.rss[m.name]!])),
            rss_total_mb: members.reduce((sum, m) => sum + sent.rss[m.name]!, 0),
            transactional_sent: sent.transactionalSent,
            transactional_p50_ms: quantile(sent.latencies, 0.5),
            transactional_p99_ms: quantile(sent.latencies, 0.99),
            transactional_max_ms: sent.latencies.at(-1) ?? Number.NaN,
            ...Object.fromEntries(Object.entries(sent.cpu).map(([name, ms]) => [`cpu_ms_per_message_${name}`, ms])),
          };
        },
        close: () => Promise.resolve(),
      };
    },

    summarize(stats) {
      const p99 = med(stats, 'transactional_p99_ms');
      const rss = med(stats, 'rss_total_mb');
      return [
        {
          name: `broadcast${suffix}`,
          figure: `${fmt(med(stats, 'recipients'))} recipients in ${fmt(med(stats, 'launch_to_last_s'))} s from launch to the last at the relay, ${fmt(med(stats, 'broadcast_per_s'))} messages/s`,
          ratio: med(stats, 'ratio_of_plain'),
          baseline: `plain pooled nodemailer, DKIM-signed (RSA-2048), ${fmt(med(stats, 'plain_nodemailer_per_s'))}/s`,
          target: { text: '≥ 50 %', met: med(stats, 'ratio_of_plain') >= 0.5 },
        },
        {
          name: `broadcast${suffix}-footprint`,
          figure:
            shape === 'split'
              ? `peak RSS api ${fmt(med(stats, 'rss_api_mb'))} MB + worker ${fmt(med(stats, 'rss_worker_mb'))} MB during the broadcast`
              : `peak RSS of the one Herald process (api, worker, smtp) ${fmt(med(stats, 'rss_herald_mb'))} MB during the broadcast`,
          ratio: rss / 600,
          baseline: 'the 600 MB target',
          target: { text: '< 600 MB', met: rss < 600 },
        },
        {
          name: `broadcast${suffix}-transactional`,
          figure: `transactional sends during the broadcast: 202 to relay p50 ${fmt(med(stats, 'transactional_p50_ms'))} ms, p99 ${fmt(p99)} ms (${fmt(med(stats, 'transactional_sent'))} sent)`,
          ratio: p99 / 1000,
          baseline: 'the 1 s p99 target',
          target: { text: 'p99 < 1 s', met: p99 < 1000 },
        },
      ];
    },
  };
}
