/**
 * 3. Transactional sends: acceptance rate, delivery rate to the relay, and 202-to-relay latency,
 * through real `herald api` and `herald worker` processes, the Temporal dev server and the dev
 * mail sink (in this process) as the relay.
 *
 * Each run measures, in order:
 * 1. baseline A: empty workflows started from this process on the same Temporal server
 *    (50 in flight; nothing runs them) — what one start costs the server; terminated after;
 * 2. acceptance: POST /api/v1/outbox/emails with autocannon (50 connections, one recipient,
 *    a new Idempotency-Key each), with the API's defaults (202 at commit), the worker paused
 *    like the baseline's workflows have nothing running them; accepted sends/s;
 * 3. delivery: the worker resumed, from then to the last of the accepted messages at the relay;
 * 4. baseline B: plain nodemailer (pooled, same pool size as the worker) sending the same number
 *    of similar messages to the same relay, 50 in flight, each DKIM-signed with an RSA-2048 key
 *    as Herald signs them;
 * 5. latency: once the work of the phases before has finished, 20 sends/s, from each 202 to its
 *    message at the relay;
 * 6. composing: CPU ms of this process per message composed and DKIM-signed by Herald's composer
 *    (what the relay thread does per message) against nodemailer's stream transport alone;
 * 7. burst: 4,000 sends (`--quick`: 1,000) over 20 connections with the worker running, as a
 *    user's burst meets Herald: the rate from the first request to the last message at the relay
 *    against plain pooled nodemailer (the same pool, 20 in flight), and each send's 202-to-relay
 *    latency in that burst.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { Client } from '@temporalio/client';
import { connectTemporal } from '../src/temporal/client.ts';
import nodemailer from 'nodemailer';
import type { BenchContext } from './lib/context.ts';
import { burstClaims, startBurstTimeline } from './lib/burst-timeline.ts';
import { composeCost } from './lib/compose-cost.ts';
import { runHttpLoad } from './lib/load.ts';
import { sendingWorkspace } from './lib/sending.ts';
import { counters, writesPerUnit } from './lib/pg-activity.ts';
import { cpuAccount, postgresOf } from './lib/proc.ts';
import { fmt, med, quantile } from './lib/stats.ts';
import type { Benchmark } from './lib/types.ts';

const CONNECTIONS = 50;
const RATE = 20;
const POOL = 5;
/** The burst phase: sends at once over this many connections, the worker running (issue 35 item 2). */
const BURST_CONNECTIONS = 20;
/** The burst's timeline (bench/lib/burst-timeline.ts), with HERALD_BENCH_BURST_TIMELINE=1: one sample this often. */
const TIMELINE_MS = 250;
const TIMELINE = process.env.HERALD_BENCH_BURST_TIMELINE === '1';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const benchmark: Benchmark = {
  name: 'sends',
  description: `Accepted sends/s (POST /outbox/emails, ${CONNECTIONS} connections) against empty workflow starts/s on the same Temporal server; messages/s at the relay against plain pooled nodemailer; 202-to-relay latency at ${RATE} sends/s.`,
  needsTemporal: 'own',

  async setup(context: BenchContext) {
    const quick = context.options.quick;
    const duration = context.options.durationSec;
    const latencySeconds = quick ? 4 : 10;
    const burstSends = quick ? 1_000 : 4_000;
    const emptyStarts = quick ? 300 : 1000;

    const { sink, databaseUrl, workspace, orm, domain } = await sendingWorkspace(context);
    if (process.env.HERALD_BENCH_LOG_STATEMENTS === '1') {
      // Diagnosis only (it costs PostgreSQL CPU): every statement of the run's database in the server log.
      await orm.em.getConnection().execute(`alter database "${postgresOf(databaseUrl).slice(3)}" set log_min_duration_statement = 0`);
    }

    const relayEnv = {
      SMTP_RELAY_URL: `smtp://127.0.0.1:${sink.smtpPort}`,
      SMTP_RELAY_FINAL_HOP: 'true',
      SMTP_RELAY_POOL_SIZE: String(POOL),
      BLOB_DIR: '',
    };
    const worker = await context.start('worker', await context.env(databaseUrl, relayEnv), { profile: true });
    const workerNice = process.env.HERALD_BENCH_WORKER_AUTOGROUP_NICE;
    if (workerNice) {
      // Diagnosis only (a scheduling experiment, not Herald's default): the worker's session weighs
      // more (negative) or less against the api's and each PostgreSQL backend's when the cores are
      // saturated (Linux autogroups: one per session, and every backend is a session of its own).
      writeFileSync(`/proc/${worker.pid}/autogroup`, workerNice);
      context.note('worker autogroup', readFileSync(`/proc/${worker.pid}/autogroup`, 'utf8'));
    }
    const api = await context.start('api', await context.env(databaseUrl, relayEnv), { profile: true });
    const dkimKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

    const temporal = await context.temporal();
    const connection = await connectTemporal({ address: temporal.address, tls: null });
    context.defer(() => connection.close());
    const client = new Client({ connection, namespace: temporal.namespace });

    const headers = { Authorization: `Bearer ${workspace.key}`, 'Content-Type': 'application/json', 'Idempotency-Key': 'bench-[<id>]' };
    const body = (tag: string) =>
      JSON.stringify({
        from: `Bench <bench@${domain}>`,
        to: `delivered+${tag}@simulator.herald.test`,
        subject: 'Bench',
        text: 'Hello from the benchmark.',
        html: '<p>Hello from the benchmark.</p>',
      });

    /** Runs `count` times over `loops` concurrent loops. */
    async function inParallel(count: number, task: (index: number) => Promise<unknown>, loops = CONNECTIONS): Promise<void> {
      let next = 0;
      await Promise.all(
        Array.from({ length: loops }, async () => {
          while (next < count) await task((next += 1) - 1);
        }),
      );
    }

    /**
     * Starts `count` empty workflows (nothing runs them) and gives the rate of the starts; then,
     * untimed, terminates them, so thousands of never-run workflows do not stay on the shared
     * server and slow what is measured after them.
     */
    async function startEmptyWorkflows(count: number): Promise<number> {
      const queue = `bench-empty-${randomBytes(3).toString('hex')}`;
      const ids = Array.from({ length: count }, () => `bench-empty-${randomBytes(8).toString('hex')}`);
      const started = performance.now();
      await inParallel(count, (i) => client.workflow.start('benchEmpty', { taskQueue: queue, workflowId: ids[i]!, args: [] }));
      const rate = count / ((performance.now() - started) / 1000);
      await inParallel(count, (i) => client.workflow.getHandle(ids[i]!).terminate('benchmark baseline measured'));
      return rate;
    }

    /**
     * Acceptance, then delivery of what was accepted, measured apart: the worker is paused
     * (SIGSTOP) while the load runs, as the baseline's empty workflows have nothing running
     * them, so the accept rate is the API's and the delivery rate is the drain's over a backlog
     * (on 2 cores the two would otherwise take CPU from each other and the relay rate could
     * never pass the accept rate). The worker resumes (SIGCONT) with its leases and LISTEN
     * connection intact; the drain rate runs from the resume to the last arrival.
     */
    async function acceptance(tag: string, target = api) {
      const before = sink.messages().length;
      // Every backend publishes what the phases before wrote (at most 10 s late) before the first reading.
      await sleep(11_000);
      const databaseBefore = await counters(databaseUrl);
      process.kill(worker.pid, 'SIGSTOP');
      let accepted;
      try {
        const acceptCpu = cpuAccount({ api: target.pid, temporal: temporal.pid, postgres: postgresOf(databaseUrl), bench: 'this' });
        const load = await runHttpLoad({
          url: `${target.url}/api/v1/outbox/emails`,
          method: 'POST',
          headers,
          body: body(`${tag}-[<id>]`),
          uniqueIds: true,
          connections: CONNECTIONS,
          durationSec: duration,
        });
        accepted = { load, cpuPerAccept: acceptCpu.perUnit(load.total - load.failures) };
      } finally {
        process.kill(worker.pid, 'SIGCONT');
      }
      const { load } = accepted;
      // CPU of every process on the delivery path; `bench` is this process: the relay (mail sink).
      const drainCpu = cpuAccount({ worker: worker.pid, temporal: temporal.pid, postgres: postgresOf(databaseUrl), bench: 'this' });
      const resumed = Date.now();
      const deadline = resumed + 300_000;
      while (sink.messages().length - before < load.total - load.failures && Date.now() < deadline) await sleep(50);
      const arrived = sink.messages().slice(before);
      const last = Math.max(...arrived.map((m) => Date.parse(m.receivedAt)));
      const cpuPerDelivery = drainCpu.perUnit(arrived.length);
      // The database's writes per send, accept to events fanned out, once every backend has published its statistics.
      await quiesce();
      await sleep(11_000);
      const database = writesPerUnit(databaseBefore, await counters(databaseUrl), arrived.length);
      context.note(`database writes per send (${tag}): table +inserted ~updated -deleted`, database.tables);
      return {
        load,
        arrived: arrived.length,
        relayRate: arrived.length / ((last - resumed) / 1000),
        cpuPerAccept: accepted.cpuPerAccept,
        cpuPerDelivery,
        database: database.figures,
      };
    }

    async function plainNodemailer(count: number, inFlight = CONNECTIONS): Promise<number> {
      const transport = nodemailer.createTransport({
        pool: true,
        host: '127.0.0.1',
        port: sink.smtpPort,
        maxConnections: POOL,
        maxMessages: 1000,
        dkim: { domainName: domain, keySelector: 'herald', privateKey: dkimKey },
      });
      const started = performance.now();
      await inParallel(
        count,
        (i) =>
          transport.sendMail({
            from: `bench@${domain}`,
            to: `plain-${i + 1}@simulator.herald.test`,
            subject: 'Bench',
            text: 'Hello from the benchmark.',
            html: '<p>Hello from the benchmark.</p>',
          }),
        inFlight,
      );
      transport.close();
      return count / ((performance.now() - started) / 1000);
    }

    /**
     * Waits until the work of the phases before has finished (no email still queued or sending,
     * no event left to fan out), so the latency phase measures its own sends only.
     */
    async function quiesce(): Promise<void> {
      const deadline = Date.now() + 120_000;
      const busy = async () => {
        const [row] = await orm.em.getConnection().execute<{ busy: number }[]>(
          `select (select count(*) from transactional_emails where status in ('queued', 'sending'))
                + (select count(*) from events where fanned_out_at is null) as busy`,
        );
        return Number(row?.busy ?? 0);
      };
      while ((await busy()) > 0 && Date.now() < deadline) await sleep(100);
    }

    /** One send over the API; its 202's time (epoch ms) goes into `answeredAt` under its Message-ID. */
    async function sendTimed(tag: string, answeredAt: Map<string, number>, answerMs?: number[]): Promise<void> {
      const sent = Date.now();
      const response = await fetch(`${api.url}/api/v1/outbox/emails`, {
        method: 'POST',
        headers: { ...headers, 'Idempotency-Key': `${tag}-${randomBytes(8).toString('hex')}` },
        body: body(tag),
      });
      const at = Date.now();
      const json = (await response.json()) as { data?: { message_id: string } };
      if (response.status !== 202 || !json.data) throw new Error(`send answered ${response.status}`);
      answeredAt.set(json.data.message_id, at);
      answerMs?.push(at - sent);
    }

    /** The relay's copies of the sends in `answeredAt`, once all arrived (or after `waitMs`). */
    async function arrivalsOf(answeredAt: Map<string, number>, waitMs: number) {
      const deadline = Date.now() + waitMs;
      const arrivals = () => sink.messages().filter((m) => m.messageId !== null && answeredAt.has(m.messageId));
      while (arrivals().length < answeredAt.size && Date.now() < deadline) await sleep(50);
      const arrived = arrivals();
      const latencies = arrived
        .map((m) => Date.parse(m.receivedAt) - (answeredAt.get(m.messageId as string) as number))
        .sort((a, b) => a - b);
      return { arrived, latencies };
    }

    /**
     * A burst as a user sends it: `count` sends over BURST_CONNECTIONS with the worker running
     * (acceptance and delivery share the cores), from the first request to the last message at
     * the relay, and each send's 202-to-relay latency.
     */
    async function burst(count: number, tag: string) {
      await quiesce();
      const cpu = cpuAccount({
        api: api.pid,
        worker: worker.pid,
        temporal: temporal.pid,
        postgres: postgresOf(databaseUrl),
        bench: 'this',
      });
      const answeredAt = new Map<string, number>();
      const relayedBefore = sink.messages().length;
      const burstStarted = Date.now();
      // Opt-in: its readings (/proc scans every TIMELINE_MS) cost ~0.25 CPU ms per send in this process, on the cores the burst shares.
      const timeline = !TIMELINE
        ? null
        : startBurstTimeline({
            orm,
            intervalMs: TIMELINE_MS,
            relayPort: sink.smtpPort,
            pids: { api: api.pid, worker: worker.pid, temporal: temporal.pid, bench: process.pid },
            postgres: postgresOf(databaseUrl),
            accepted: () => answeredAt.size,
            relayed: () => sink.messages().length - relayedBefore,
          });
      const started = Date.now();
      // Each request's time to its 202: what a faster drain may cost acceptance on shared cores.
      const answerMs: number[] = [];
      await inParallel(count, (i) => sendTimed(`burst${i}`, answeredAt, answerMs), BURST_CONNECTIONS);
      answerMs.sort((a, b) => a - b);
      const acceptRate = answeredAt.size / ((Date.now() - started) / 1000);
      const { arrived, latencies } = await arrivalsOf(answeredAt, 300_000);
      const last = Math.max(...arrived.map((m) => Date.parse(m.receivedAt)));
      const seconds = (last - started) / 1000;
      const cpuPerSend = cpu.perUnit(arrived.length);
      const sampled = await timeline?.stop();
      if (sampled) context.note(`sends burst timeline (${tag}), every ${TIMELINE_MS} ms; cpu and wait in ms per s`, sampled.text);
      const claims = await burstClaims(orm, burstStarted);
      context.note(`sends burst claims (${tag})`, claims.text);
      return {
        rate: arrived.length / seconds,
        acceptRate,
        answerP50: quantile(answerMs, 0.5),
        answerP99: quantile(answerMs, 0.99),
        seconds,
        latencies,
        cpuPerSend,
        claims: { ...claims.figures, ...(sampled ? { timeline_cpu_ms_per_send: sampled.samplerMs / arrived.length } : {}) },
      };
    }

    /** 202-to-relay latencies at RATE sends/s, and the CPU ms per send of each process at that rate (accept and deliver together). */
    async function latency(seconds: number): Promise<{ latencies: number[]; cpuPerSend: Record<string, number>; commitsPerSend: number }> {
      await quiesce();
      await sleep(11_000);
      const databaseBefore = await counters(databaseUrl);
      const cpu = cpuAccount({ api: api.pid, worker: worker.pid, temporal: temporal.pid, postgres: postgresOf(databaseUrl) });
      const answeredAt = new Map<string, number>();
      const count = RATE * seconds;
      const started = performance.now();
      const requests: Promise<void>[] = [];
      for (let i = 0; i < count; i += 1) {
        const wait = started + (i * 1000) / RATE - performance.now();
        if (wait > 0) await sleep(wait);
        requests.push(sendTimed(`lat${i}`, answeredAt));
      }
      await Promise.all(requests);
      const { arrived, latencies } = await arrivalsOf(answeredAt, 120_000);
      const cpuPerSend = cpu.perUnit(arrived.length);
      await sleep(11_000);
      // Transactions per send at this rate: an acceptance, a share of a group commit, and each claim of the drain (empty ones too).
      const { figures } = writesPerUnit(databaseBefore, await counters(databaseUrl), arrived.length);
      return {
        latencies,
        cpuPerSend,
        commitsPerSend: figures.commits,
      };
    }

    return {
      async warmup() {
        await startEmptyWorkflows(100);
        await runHttpLoad({
          url: `${api.url}/api/v1/outbox/emails`,
          method: 'POST',
          headers,
          body: body('warm-[<id>]'),
          uniqueIds: true,
          connections: 10,
          durationSec: context.options.warmupSec,
        });
        await plainNodemailer(100);
        await latency(1);
      },
      async run(index) {
        const starts = await startEmptyWorkflows(emptyStarts);
        const sent = await acceptance(`run${index}`);
        const plain = await plainNodemailer(Math.max(200, sent.arrived));
        const { latencies, cpuPerSend: trickle, commitsPerSend } = await latency(latencySeconds);
        const compose = await composeCost(dkimKey, domain, quick ? 100 : 300);
        const burstRun = await burst(burstSends, `run${index}`);
        const burstPlain = await plainNodemailer(burstSends, BURST_CONNECTIONS);
        return {
          empty_starts_per_s: starts,
          accepted_per_s: sent.load.rps,
          accept_p50_ms: sent.load.p50Ms,
          accept_p99_ms: sent.load.p99Ms,
          accept_ratio_of_starts: sent.load.rps / starts,
          relay_per_s: sent.relayRate,
          plain_nodemailer_per_s: plain,
          relay_ratio_of_plain: sent.relayRate / plain,
          to_relay_p50_ms: quantile(latencies, 0.5),
          to_relay_p99_ms: quantile(latencies, 0.99),
          to_relay_max_ms: latencies.at(-1) ?? Number.NaN,
          backlog: sent.arrived,
          burst_sends: burstRun.latencies.length,
          burst_per_s: burstRun.rate,
          burst_plain_nodemailer_per_s: burstPlain,
          burst_ratio_of_plain: burstRun.rate / burstPlain,
          burst_to_relay_p50_ms: quantile(burstRun.latencies, 0.5),
          burst_to_relay_p99_ms: quantile(burstRun.latencies, 0.99),
          burst_accepted_per_s: burstRun.acceptRate,
          burst_accept_p50_ms: burstRun.answerP50,
          burst_accept_p99_ms: burstRun.answerP99,
          burst_seconds: burstRun.seconds,
          ...Object.fromEntries(Object.entries(burstRun.claims).map(([name, value]) => [`burst_${name}`, value])),
          // Every process's CPU per send in the burst (`bench`: this process, the senders and the relay).
          ...Object.fromEntries(Object.entries(burstRun.cpuPerSend).map(([name, ms]) => [`burst_cpu_ms_per_send_${name}`, ms])),
          compose_cpu_ms: compose.herald,
          compose_plain_cpu_ms: compose.plain,
          ...Object.fromEntries(Object.entries(sent.cpuPerAccept).map(([name, ms]) => [`cpu_ms_per_accept_${name}`, ms])),
          ...Object.fromEntries(Object.entries(sent.cpuPerDelivery).map(([name, ms]) => [`cpu_ms_per_delivery_${name}`, ms])),
          ...Object.fromEntries(Object.entries(sent.database).map(([name, value]) => [`db_per_send_${name}`, value])),
          // At RATE sends/s each send is claimed, sent and recorded mostly on its own: the cost of a send when the queue is not busy.
          ...Object.fromEntries(Object.entries(trickle).map(([name, ms]) => [`cpu_ms_per_send_at_${RATE}_per_s_${name}`, ms])),
          [`db_commits_per_send_at_${RATE}_per_s`]: commitsPerSend,
        };
      },
      close: () => Promise.resolve(),
    };
  },

  summarize(stats) {
    const p50 = med(stats, 'to_relay_p50_ms');
    const p99 = med(stats, 'to_relay_p99_ms');
    return [
      {
        name: 'sends-accept',
        figure: `${fmt(med(stats, 'accepted_per_s'))} accepted sends/s (p50 ${fmt(med(stats, 'accept_p50_ms'))} ms, p99 ${fmt(med(stats, 'accept_p99_ms'))} ms)`,
        ratio: med(stats, 'accept_ratio_of_starts'),
        baseline: `empty workflow starts from one process, ${fmt(med(stats, 'empty_starts_per_s'))}/s`,
        target: { text: '≥ 100 %', met: med(stats, 'accept_ratio_of_starts') >= 1 },
      },
      {
        name: 'sends-relay',
        figure: `${fmt(med(stats, 'relay_per_s'))} messages/s at the relay`,
        ratio: med(stats, 'relay_ratio_of_plain'),
        baseline: `plain pooled nodemailer to the same relay, DKIM-signed (RSA-2048), ${fmt(med(stats, 'plain_nodemailer_per_s'))}/s`,
        target: { text: '≥ 50 %', met: med(stats, 'relay_ratio_of_plain') >= 0.5 },
      },
      {
        name: 'sends-latency',
        figure: `202 to relay p50 ${fmt(p50)} ms, p99 ${fmt(p99)} ms at ${RATE} sends/s`,
        ratio: p50 / 150,
        baseline: 'the 150 ms p50 target',
        target: { text: 'p50 < 150 ms, p99 < 1 s', met: p50 < 150 && p99 < 1000 },
      },
      {
        name: 'sends-burst',
        figure: `${fmt(med(stats, 'burst_per_s'))} messages/s from the first request to the last message at the relay, ${fmt(med(stats, 'burst_sends'))} sends over ${BURST_CONNECTIONS} connections with the worker running; 202 to relay p50 ${fmt(med(stats, 'burst_to_relay_p50_ms'))} ms, p99 ${fmt(med(stats, 'burst_to_relay_p99_ms'))} ms`,
        ratio: med(stats, 'burst_ratio_of_plain'),
        baseline: `plain pooled nodemailer (${POOL} connections, ${BURST_CONNECTIONS} in flight), DKIM-signed (RSA-2048), ${fmt(med(stats, 'burst_plain_nodemailer_per_s'))}/s`,
        target: {
          text: '≥ 50 %, burst p50 < 1 s',
          met: med(stats, 'burst_ratio_of_plain') >= 0.5 && med(stats, 'burst_to_relay_p50_ms') < 1000,
        },
      },
      {
        name: 'sends-compose',
        figure: `${fmt(med(stats, 'compose_cpu_ms'))} CPU ms per message composed and DKIM-signed (RSA-2048)`,
        ratio: med(stats, 'compose_cpu_ms') / med(stats, 'compose_plain_cpu_ms'),
        baseline: `nodemailer's stream transport given the same message, ${fmt(med(stats, 'compose_plain_cpu_ms'))} ms`,
      },
    ];
  },
};
