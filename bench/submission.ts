/**
 * SMTP submission: messages/s accepted through the submission front door (pooled nodemailer,
 * AUTH with the API key, one message per SMTP transaction) against accepted sends/s through
 * POST /api/v1/outbox/emails in the same run, both with the worker delivering to the dev mail
 * sink as the relay; then every submitted message is awaited at the sink ("reaches its
 * recipient") and counted through GET /api/v1/outbox/emails.
 */
import nodemailer from 'nodemailer';
import type { BenchContext } from './lib/context.ts';
import { runHttpLoad } from './lib/load.ts';
import { sendingWorkspace } from './lib/sending.ts';
import { fmt, med } from './lib/stats.ts';
import type { Benchmark } from './lib/types.ts';

const CONNECTIONS = 10;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const benchmark: Benchmark = {
  name: 'submission',
  description: `Messages/s through the SMTP submission front door (pooled nodemailer, ${CONNECTIONS} connections, AUTH with an API key) against POST /outbox/emails (${CONNECTIONS} connections) in the same run; every submitted message awaited at the relay.`,
  needsTemporal: 'own',

  async setup(context: BenchContext) {
    const count = context.options.quick ? 300 : 1000;
    const { sink, databaseUrl, workspace, domain } = await sendingWorkspace(context);
    const relayEnv = { SMTP_RELAY_URL: `smtp://127.0.0.1:${sink.smtpPort}`, SMTP_RELAY_FINAL_HOP: 'true', BLOB_DIR: context.scratch };
    const submissionPort = await context.freePort();
    await context.start('worker', await context.env(databaseUrl, relayEnv));
    const api = await context.start('api', await context.env(databaseUrl, relayEnv));
    await context.start('smtp', await context.env(databaseUrl, { ...relayEnv, SMTP_SUBMISSION_PORT: String(submissionPort) }));

    async function submit(tag: string, messages: number): Promise<{ rate: number; arrived: number; listed: number }> {
      const transport = nodemailer.createTransport({
        host: '127.0.0.1',
        port: submissionPort,
        secure: false,
        ignoreTLS: true,
        pool: true,
        maxConnections: CONNECTIONS,
        maxMessages: Infinity,
        auth: { user: 'herald', pass: workspace.key },
      });
      const subject = `Submission ${tag}`;
      const arrived = () => sink.messages().filter((m) => m.subject === subject).length;
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: CONNECTIONS }, async () => {
          while (next < messages) {
            const i = (next += 1);
            await transport.sendMail({
              from: `Bench <bench@${domain}>`,
              to: `delivered+${tag}-${i}@simulator.herald.test`,
              subject,
              text: 'Hello through SMTP.',
            });
          }
        }),
      );
      const rate = messages / ((performance.now() - started) / 1000);
      transport.close();
      const deadline = Date.now() + 300_000;
      while (arrived() < messages && Date.now() < deadline) await sleep(100);
      return { rate, arrived: arrived(), listed: await countListed(subject) };
    }

    /** Emails with `subject` as GET /outbox/emails shows them (pages of 100). */
    async function countListed(subject: string): Promise<number> {
      let total = 0;
      let cursor: string | null = null;
      do {
        const response = await fetch(`${api.url}/api/v1/outbox/emails?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, {
          headers: { Authorization: `Bearer ${workspace.key}` },
        });
        const page = (await response.json()) as { data: { subject: string }[]; meta: { pagination: { next_cursor: string | null } } };
        total += page.data.filter((email) => email.subject === subject).length;
        cursor = page.meta.pagination.next_cursor;
      } while (cursor);
      return total;
    }

    const headers = { Authorization: `Bearer ${workspace.key}`, 'Content-Type': 'application/json', 'Idempotency-Key': 'bench-[<id>]' };
    const body = JSON.stringify({
      from: `Bench <bench@${domain}>`,
      to: 'delivered+api-[<id>]@simulator.herald.test',
      subject: 'Bench API',
      text: 'Hello through the API.',
    });
    const apiLoad = (durationSec: number) =>
      runHttpLoad({
        url: `${api.url}/api/v1/outbox/emails`,
        method: 'POST',
        headers,
        body,
        uniqueIds: true,
        connections: CONNECTIONS,
        durationSec,
      });

    return {
      async warmup() {
        await submit('warm', 50);
        await apiLoad(Math.min(2, context.options.warmupSec));
      },
      async run(index) {
        const smtp = await submit(`run${index}`, count);
        const viaApi = await apiLoad(context.options.durationSec);
        return {
          submitted_per_s: smtp.rate,
          api_accepted_per_s: viaApi.rps,
          ratio_of_api: smtp.rate / viaApi.rps,
          submitted: count,
          arrived_at_relay: smtp.arrived,
          listed_by_api: smtp.listed,
        };
      },
      close: () => Promise.resolve(),
    };
  },

  summarize(stats) {
    return [
      {
        name: 'submission',
        figure: `${fmt(med(stats, 'submitted_per_s'))} messages/s through SMTP submission; ${fmt(med(stats, 'arrived_at_relay'))} of ${fmt(med(stats, 'submitted'))} at the relay, ${fmt(med(stats, 'listed_by_api'))} listed by GET /outbox/emails`,
        ratio: med(stats, 'ratio_of_api'),
        baseline: `POST /outbox/emails with ${CONNECTIONS} connections in the same run, ${fmt(med(stats, 'api_accepted_per_s'))}/s`,
      },
    ];
  },
};
