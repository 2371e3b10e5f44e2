/**
 * Message streams: does a broadcast-stream backlog delay transactional mail of the same domain?
 * Real `herald api` and `herald worker` processes, the Temporal dev server and a counting relay
 * (bench/lib/counting-relay.ts, in this process).
 *
 * Each run queues 100,000 emails in the `broadcast` stream (`--quick`: 10,000) through
 * POST /outbox/emails/batch (100 per request, `stream: "broadcast"`), all on one sending domain,
 * four requests at a time, and from the first of them until the backlog has drained sends
 * transactional-stream emails at 10/s over the API, each timed from its 202 to its arrival at
 * the relay. Figures: transactional p50/p99/max, and the backlog's drain rate. The claim takes transactional-kind mail first (docs/deliverability.md),
 * so the p99 should stay near what one email in flight takes, whatever the backlog.
 */
import { randomBytes } from 'node:crypto';
import type { BenchContext } from './lib/context.ts';
import { startCountingRelay } from './lib/counting-relay.ts';
import { sendingWorkspace } from './lib/sending.ts';
import { fmt, med, quantile } from './lib/stats.ts';
import type { Benchmark } from './lib/types.ts';

const POOL = 5;
const TRANSACTIONAL_RATE = 10;
const BATCH = 100;
/** Batch requests in flight while the backlog is queued. */
const POSTERS = 4;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const benchmark: Benchmark = {
  name: 'streams',
  description:
    'Transactional-stream p99 (202 to relay, 10/s) while a 100,000-email broadcast-stream backlog (--quick: 10,000) drains on the same domain.',
  needsTemporal: true,

  async setup(context: BenchContext) {
    const backlog = context.options.quick ? 10_000 : 100_000;
    const { databaseUrl, workspace, domain } = await sendingWorkspace(context);
    const sink = await startCountingRelay();
    context.defer(() => sink.close());
    const env = {
      SMTP_RELAY_URL: `smtp://127.0.0.1:${sink.port}`,
      SMTP_RELAY_FINAL_HOP: 'true',
      SMTP_RELAY_POOL_SIZE: String(POOL),
      BLOB_DIR: '',
    };
    await context.start('worker', await context.env(databaseUrl, env));
    const api = await context.start('api', await context.env(databaseUrl, env));
    const headers = { Authorization: `Bearer ${workspace.key}`, 'Content-Type': 'application/json' };

    async function post(path: string, body: unknown): Promise<Record<string, unknown>> {
      const response = await fetch(`${api.url}${path}`, {
        method: 'POST',
        headers: { ...headers, 'Idempotency-Key': `bench-${randomBytes(8).toString('hex')}` },
        body: JSON.stringify(body),
      });
      const json = (await response.json()) as { data?: Record<string, unknown> };
      if (response.status >= 300 || !json.data) throw new Error(`POST ${path} answered ${response.status}: ${JSON.stringify(json)}`);
      return json.data;
    }

    /** Queues the backlog through batch requests, POSTERS at a time. */
    async function queueBacklog(label: string): Promise<void> {
      let next = 0;
      await Promise.all(
        Array.from({ length: POSTERS }, async () => {
          while (next < backlog) {
            const from = next;
            next += BATCH;
            const emails = Array.from({ length: Math.min(BATCH, backlog - from) }, (_, j) => ({
              from: `news@${domain}`,
              to: `bulk-${label}-${from + j}@simulator.herald.test`,
              subject: 'News',
              text: 'The newsletter.',
              stream: 'broadcast',
            }));
            await post('/api/v1/outbox/emails/batch', { emails });
          }
        }),
      );
    }

    /**
     * One run: transactional sends at TRANSACTIONAL_RATE from the first backlog request on (so
     * they meet the backlog both while it is accepted and while it drains) until the last
     * backlog email reaches the relay. The drain rate counts from the first backlog request; how
     * much was still queued when the last batch was accepted shows there was a backlog at all.
     */
    async function runOnce(label: string) {
      sink.clear();
      const isBulk = (m: { rcptTo: string[] }) => m.rcptTo[0]?.startsWith(`bulk-${label}-`) ?? false;
      const startedAt = Date.now();
      const answeredAt = new Map<string, number>();
      let done = false;
      const transactional = (async () => {
        for (let i = 0; !done; i += 1) {
          const started = Date.now();
          const sent = await post('/api/v1/outbox/emails', {
            from: `Shop <shop@${domain}>`,
            to: `tx-${label}-${i}@simulator.herald.test`,
            subject: 'Receipt',
            text: 'Thanks.',
          });
          answeredAt.set(String(sent.message_id), Date.now());
          await sleep(Math.max(0, 1000 / TRANSACTIONAL_RATE - (Date.now() - started)));
        }
      })();
      await queueBacklog(label);
      const stillQueued = backlog - sink.arrivals().filter(isBulk).length;
      const deadline = Date.now() + 1_800_000;
      while (sink.arrivals().filter(isBulk).length < backlog && Date.now() < deadline) await sleep(500);
      done = true;
      await transactional;
      const arrivals = sink.arrivals();
      const bulk = arrivals.filter(isBulk);
      const last = bulk.reduce((latest, m) => Math.max(latest, m.receivedAt), 0);
      const latencies = arrivals
        .filter((m) => m.messageId !== null && answeredAt.has(m.messageId))
        .map((m) => m.receivedAt - answeredAt.get(m.messageId as string)!)
        .sort((a, b) => a - b);
      return {
        bulk: bulk.length,
        bulkPerS: bulk.length / Math.max(0.001, (last - startedAt) / 1000),
        stillQueued,
        latencies,
        sent: answeredAt.size,
      };
    }

    return {
      warmup: () => Promise.resolve(),
      async run(index) {
        const result = await runOnce(`run${index}`);
        return {
          backlog,
          bulk_arrived: result.bulk,
          bulk_per_s: result.bulkPerS,
          backlog_when_queued: result.stillQueued,
          transactional_sent: result.sent,
          transactional_p50_ms: quantile(result.latencies, 0.5),
          transactional_p99_ms: quantile(result.latencies, 0.99),
          transactional_max_ms: result.latencies.at(-1) ?? Number.NaN,
        };
      },
      close: () => Promise.resolve(),
    };
  },

  summarize(stats) {
    const p99 = med(stats, 'transactional_p99_ms');
    return [
      {
        name: 'streams-transactional',
        figure: `transactional stream while ${fmt(med(stats, 'backlog'))} broadcast-stream emails are accepted and drain (${fmt(med(stats, 'bulk_per_s'))}/s from the first request; ${fmt(med(stats, 'backlog_when_queued'))} still queued when the last was accepted): 202 to relay p50 ${fmt(med(stats, 'transactional_p50_ms'))} ms, p99 ${fmt(p99)} ms (${fmt(med(stats, 'transactional_sent'))} sent)`,
        ratio: p99 / 1000,
        baseline: 'the 1 s p99 target',
        target: { text: 'p99 < 1 s', met: p99 < 1000 },
      },
    ];
  },
};
