/**
 * Large and hostile request bodies (issue 21): does one client posting the largest bodies the
 * API allows stall other workspaces?
 *
 * Each run: GET /api/v1/me from a second workspace, open loop at 10 requests/s (a request every
 * 100 ms, whether or not the last one answered), first alone (the baseline), then while one
 * client of the first workspace posts, one after the other and over and over: to every write
 * route a body of exactly its limit (for routes of 256 KiB and more, 98,000 small values plus
 * one long string, the most parsing work the JSON bounds allow), and a valid 25 MB send with
 * three inline attachments (about 33.4 MiB of base64). Then the two hostile cases of the
 * issue, five times each: a 100,000-level array (200 KB) and a 16.8 MB object with 1,000,000
 * keys to POST /contacts, and the same object to POST /outbox/emails (under that route's byte
 * limit, so read whole and refused by the key bound). Their server time is the api's access log
 * entry (`ms`, from the request's headers to its answer, the upload of the body included);
 * the client-observed time (request start to the end of the answer, on loopback) is shown too.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOrm } from '../db/orm.ts';
import { loadConfig } from '../src/config.ts';
import { KIB, bodyLimitOf } from '../src/http/body-limits.ts';
import { createCursorCodec } from '../src/http/cursor.ts';
import { isWrite } from '../src/http/route.ts';
import { createApiServices, createRoutes } from '../src/api-composition.ts';
import { createDomainsService } from '../src/modules/domains/domains.service.ts';
import { createOrgsService } from '../src/modules/orgs/orgs.service.ts';
import type { BenchContext } from './lib/context.ts';
import { sampleAtRate } from './lib/load.ts';
import { fmt, med, quantile } from './lib/stats.ts';
import type { Benchmark } from './lib/types.ts';

const RATE = 10;
const TARGET_P99_MS = 200;
const TARGET_HOSTILE_MS = 100;
const SAMPLE_ID = '0123456789abcdef01234567';
const MB = 1024 * 1024;

interface Payload {
  label: string;
  method: string;
  path: string;
  body: Buffer;
}

/** Exactly `bytes` bytes of JSON: within the bounds, as many small values as allowed, padded by one string. */
function largestBody(bytes: number): Buffer {
  const dense =
    bytes >= 256 * KIB ? `"d":{${Array.from({ length: 98 }, (_, i) => `"k${i}":[${new Array(1000).fill(0).join(',')}]`).join(',')}},` : '';
  const head = `{${dense}"p":"`;
  return Buffer.from(head + 'a'.repeat(bytes - head.length - 2) + '"}');
}

function objectWithKeys(count: number): Buffer {
  return Buffer.from(`{${Array.from({ length: count }, (_, i) => `"k${i}":${i}`).join(',')}}`);
}

/** The write routes of the API with the largest body each allows. */
function routePayloads(): Payload[] {
  const services = createApiServices({
    orm: undefined as never,
    config: loadConfig({}),
    temporal: undefined as never,
    logger: undefined as never,
    blobs: null,
    idempotency: undefined as never,
  });
  const routes = createRoutes(services, createCursorCodec(undefined));
  return routes.filter(isWrite).map((route) => ({
    label: `${route.method} ${route.path}`,
    method: route.method,
    path: `/api/v1${route.path.replace(/:[A-Za-z0-9_]+/g, SAMPLE_ID)}`,
    body: largestBody(bodyLimitOf(route)),
  }));
}

/** Sends `body`; resolves with the status and the ms from the start to the end of the answer. */
function post(
  agent: Agent,
  url: string,
  method: string,
  headers: Record<string, string>,
  body: Buffer,
): Promise<{ status: number; ms: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let status = 0;
    const req = httpRequest(
      url,
      {
        method,
        agent,
        headers: { ...headers, 'content-length': String(body.length), 'idempotency-key': `bench-${randomBytes(9).toString('hex')}` },
      },
      (res) => {
        status = res.statusCode ?? 0;
        res.resume();
        res.on('end', () => resolve({ status, ms: performance.now() - t0 }));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => (status && error.code === 'EPIPE' ? undefined : reject(error)));
    req.end(body);
  });
}

export const benchmark: Benchmark = {
  name: 'large-bodies',
  description: `p99 of GET /me from another workspace at ${RATE}/s while one client posts the largest body of every write route and a 25 MB inline send, against the same GET alone; time to refuse the issue's two hostile bodies.`,
  needsTemporal: true,

  async setup(context: BenchContext) {
    const databaseUrl = await context.database();
    const attacker = await context.workspace(databaseUrl);
    const victim = await context.workspace(databaseUrl);
    const orm = await createOrm({ databaseUrl, poolMax: 1 });
    const domain = `bench-${randomBytes(3).toString('hex')}.example.com`;
    try {
      await createDomainsService({ orm, encryptionKey: Buffer.from(context.services.encryptionKey, 'base64') }).addDomain({
        orgId: attacker.orgId,
        domain,
        verified: true,
      });
      await createOrgsService({ orm }).setCredits(attacker.orgId, 100_000_000);
    } finally {
      await orm.close();
    }
    const blobDir = mkdtempSync(join(tmpdir(), 'herald-bench-blobs-'));
    context.defer(() => Promise.resolve(rmSync(blobDir, { recursive: true, force: true })));
    // The api's access log (debug) gives each request's server time, by request id.
    const serverMs = new Map<string, number>();
    const onLine = (line: string) => {
      if (!line.includes('"msg":"request"') || !line.includes('"hostile-')) return;
      const entry = JSON.parse(line) as { requestId: string; ms: number };
      serverMs.set(entry.requestId, entry.ms);
    };
    const api = await context.start(
      'api',
      await context.env(databaseUrl, { BLOB_DIR: blobDir, SEND_HANDOFF_WAIT_MS: '0', LOG_LEVEL: 'debug' }),
      { profile: true, onLine },
    );

    const attachment = (size: number, i: number) => ({
      filename: `part-${i}.bin`,
      content_type: 'application/octet-stream',
      content: randomBytes(size).toString('base64'),
    });
    const inlineSend: Payload = {
      label: 'POST /outbox/emails (25 MB inline)',
      method: 'POST',
      path: '/api/v1/outbox/emails',
      body: Buffer.from(
        JSON.stringify({
          from: `Bench <bench@${domain}>`,
          to: 'delivered@simulator.herald.test',
          subject: 'Large',
          text: 'See attached.',
          attachments: [12 * MB, 12 * MB, MB - 100].map(attachment),
        }),
      ),
    };
    const payloads = [...routePayloads(), inlineSend];
    const attackHeaders = { authorization: `Bearer ${attacker.key}`, 'content-type': 'application/json' };
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    context.defer(() => Promise.resolve(agent.destroy()));

    const probe = await post(agent, `${api.url}${inlineSend.path}`, 'POST', attackHeaders, inlineSend.body);
    if (probe.status !== 202) throw new Error(`the 25 MB inline send answered ${probe.status}`);
    context.note('Bodies posted by the attacking client', payloads.map((p) => `${p.label}: ${p.body.length} bytes`).join('\n'));

    const victimGet = (seconds: number) => sampleAtRate(`${api.url}/api/v1/me`, { authorization: `Bearer ${victim.key}` }, RATE, seconds);

    /** Posts the payloads in turn until `until` resolves; counts answers and fails on a 5xx. */
    async function attack(until: Promise<unknown>): Promise<{ requests: number; sendMs: number[] }> {
      let done = false;
      void until.finally(() => (done = true));
      let requests = 0;
      const sendMs: number[] = [];
      while (!done) {
        for (const payload of payloads) {
          if (done) break;
          const answer = await post(agent, `${api.url}${payload.path}`, payload.method, attackHeaders, payload.body);
          if (answer.status >= 500) throw new Error(`${payload.label} answered ${answer.status}`);
          if (payload === inlineSend) sendMs.push(answer.ms);
          requests += 1;
        }
      }
      return { requests, sendMs: sendMs.sort((a, b) => a - b) };
    }

    const hostile: Payload[] = [
      { label: 'deep', method: 'POST', path: '/api/v1/contacts', body: Buffer.from('['.repeat(100_000) + ']'.repeat(100_000)) },
      { label: 'keys_contacts', method: 'POST', path: '/api/v1/contacts', body: objectWithKeys(1_000_000) },
      { label: 'keys_send', method: 'POST', path: '/api/v1/outbox/emails', body: objectWithKeys(1_000_000) },
    ];
    async function refusalTimes(): Promise<Record<string, number>> {
      const figures: Record<string, number> = {};
      for (const payload of hostile) {
        const times: number[] = [];
        const ids: string[] = [];
        for (let i = 0; i < 5; i += 1) {
          const id = `hostile-${payload.label}-${randomBytes(6).toString('hex')}`;
          const answer = await post(
            agent,
            `${api.url}${payload.path}`,
            payload.method,
            { ...attackHeaders, 'x-request-id': id },
            payload.body,
          );
          if (answer.status < 400 || answer.status >= 500) throw new Error(`${payload.label} answered ${answer.status}`);
          times.push(answer.ms);
          ids.push(id);
        }
        await new Promise((resolve) => setTimeout(resolve, 300));
        figures[`${payload.label}_max_ms`] = Math.max(...times);
        figures[`${payload.label}_server_max_ms`] = Math.max(...ids.map((id) => serverMs.get(id) ?? Number.NaN));
      }
      return figures;
    }

    const { durationSec, warmupSec } = context.options;
    return {
      async warmup() {
        const sampled = victimGet(warmupSec);
        await attack(sampled);
        await sampled;
      },
      async run() {
        const alone = await victimGet(durationSec);
        const sampled = victimGet(durationSec);
        const attacked = await attack(sampled);
        const under = await sampled;
        rmSync(join(blobDir, 'sends'), { recursive: true, force: true });
        return {
          p50_ms: quantile(under, 0.5),
          p99_ms: quantile(under, 0.99),
          max_ms: under[under.length - 1] ?? 0,
          alone_p99_ms: quantile(alone, 0.99),
          attack_requests: attacked.requests,
          send_p50_ms: quantile(attacked.sendMs, 0.5),
          ratio_to_alone: quantile(under, 0.99) / quantile(alone, 0.99),
          ...(await refusalTimes()),
        };
      },
      close: () => Promise.resolve(),
    };
  },

  summarize(stats) {
    const p99 = med(stats, 'p99_ms');
    const slowestRefusal = Math.max(
      med(stats, 'deep_server_max_ms'),
      med(stats, 'keys_contacts_server_max_ms'),
      med(stats, 'keys_send_server_max_ms'),
    );
    return [
      {
        name: 'large-bodies',
        figure: `GET /me p99 ${fmt(p99)} ms (p50 ${fmt(med(stats, 'p50_ms'))}, max ${fmt(med(stats, 'max_ms'))}) at ${RATE}/s under ${fmt(med(stats, 'attack_requests'))} largest bodies per run; 25 MB inline send p50 ${fmt(med(stats, 'send_p50_ms'))} ms`,
        ratio: med(stats, 'ratio_to_alone'),
        baseline: `GET /me alone, p99 ${fmt(med(stats, 'alone_p99_ms'))} ms`,
        target: { text: `p99 < ${TARGET_P99_MS} ms`, met: p99 < TARGET_P99_MS },
      },
      {
        name: 'large-bodies hostile',
        figure: `server time (client-observed): 100,000-deep array → 400 in ≤ ${fmt(med(stats, 'deep_server_max_ms'))} ms (${fmt(med(stats, 'deep_max_ms'))}); 1,000,000 keys → 413 in ≤ ${fmt(med(stats, 'keys_contacts_server_max_ms'))} ms (${fmt(med(stats, 'keys_contacts_max_ms'))}) on contacts, 400 in ≤ ${fmt(med(stats, 'keys_send_server_max_ms'))} ms (${fmt(med(stats, 'keys_send_max_ms'))}) on the send route, read whole`,
        ratio: slowestRefusal / TARGET_HOSTILE_MS,
        baseline: `the ${TARGET_HOSTILE_MS} ms target`,
        target: { text: `every refusal < ${TARGET_HOSTILE_MS} ms`, met: slowestRefusal < TARGET_HOSTILE_MS },
      },
    ];
  },
};
