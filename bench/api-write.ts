/**
 * 2. API write: POST /api/v1/contacts through the whole api (authentication, rate limiting,
 * Idempotency-Key stored and completed, validation, the insert and its contact.created event in
 * one transaction), a new Idempotency-Key and a new email on every request, 50 connections,
 * against single INSERTs of a contact through pg with the api's pool size and 50 in flight.
 * Address DNS checks are off (CONTACT_DNS_CHECK=false): this machine resolves nothing.
 */
import { randomBytes } from 'node:crypto';
import type { BenchContext } from './lib/context.ts';
import { runHttpLoad, runPgLoop } from './lib/load.ts';
import { databaseWorkPerRequest } from './lib/pg-activity.ts';
import { fmt, med } from './lib/stats.ts';
import type { Benchmark } from './lib/types.ts';

const CONNECTIONS = 50;
const POOL = 10;
const PATH = '/api/v1/contacts';

/** `[<id>]` is replaced by autocannon with a new id per request, in the body and the headers. */
const BODY = JSON.stringify({ email: 'bench-[<id>]@example.com', first_name: 'Bench', last_name: 'Writer', tags: ['bench'] });

const INSERT_SQL = `
  insert into contacts (id, org_id, email, first_name, last_name, company, tags, custom_fields, status, created_at, updated_at)
  values ($1, $2, $3, 'Bench', 'Writer', '', '{bench}', '{}', 'active', now(), now())`;

export const benchmark: Benchmark = {
  name: 'api-write',
  description: `POST ${PATH} with a new Idempotency-Key and email per request, ${CONNECTIONS} connections, against an INSERT loop through pg (pool ${POOL}, ${CONNECTIONS} in flight).`,

  async setup(context: BenchContext) {
    const databaseUrl = await context.database();
    const workspace = await context.workspace(databaseUrl);
    const api = await context.start('api', await context.env(databaseUrl, { DATABASE_POOL_MAX: String(POOL) }), { profile: true });
    const headers = {
      Authorization: `Bearer ${workspace.key}`,
      'Content-Type': 'application/json',
      'Idempotency-Key': 'bench-[<id>]',
    };

    const probe = await fetch(`${api.url}${PATH}`, {
      method: 'POST',
      headers: { ...headers, 'Idempotency-Key': `probe-${randomBytes(8).toString('hex')}` },
      body: BODY.replace('[<id>]', 'probe'),
    });
    if (probe.status !== 201) throw new Error(`POST ${PATH} answered ${probe.status}: ${(await probe.text()).slice(0, 300)}`);
    let probes = 0;
    context.note(
      'Database work per request',
      await databaseWorkPerRequest(databaseUrl, 100, async () => {
        probes += 1;
        const response = await fetch(`${api.url}${PATH}`, {
          method: 'POST',
          headers: { ...headers, 'Idempotency-Key': `probe-${probes}-${randomBytes(8).toString('hex')}` },
          body: BODY.replace('[<id>]', `probe-${probes}`),
        });
        if (response.status !== 201) throw new Error(`POST ${PATH} answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
      }),
    );

    const herald = (durationSec: number) =>
      runHttpLoad({
        url: `${api.url}${PATH}`,
        method: 'POST',
        headers,
        body: BODY,
        uniqueIds: true,
        connections: CONNECTIONS,
        durationSec,
      });
    let batch = 0;
    const pgLoop = (durationSec: number) => {
      const tag = `${(batch += 1).toString(16).padStart(4, '0')}${randomBytes(6).toString('hex')}`;
      return runPgLoop({
        databaseUrl,
        poolMax: POOL,
        concurrency: CONNECTIONS,
        durationSec,
        statement: (i) => ({
          text: INSERT_SQL,
          values: [`${tag}${i.toString(16).padStart(8, '0')}`, workspace.orgId, `pg-${tag}-${i}@example.com`],
        }),
      });
    };
    const { durationSec, warmupSec } = context.options;

    return {
      async warmup() {
        await herald(warmupSec);
        await pgLoop(Math.min(2, warmupSec));
      },
      async run() {
        const heraldResult = await herald(durationSec);
        const pgResult = await pgLoop(durationSec);
        return {
          herald_rps: heraldResult.rps,
          herald_p50_ms: heraldResult.p50Ms,
          herald_p99_ms: heraldResult.p99Ms,
          pg_rps: pgResult.rps,
          pg_p50_ms: pgResult.p50Ms,
          pg_p99_ms: pgResult.p99Ms,
          ratio_of_pg: heraldResult.rps / pgResult.rps,
        };
      },
      close: () => Promise.resolve(),
    };
  },

  summarize(stats) {
    return [
      {
        name: 'api-write',
        figure: `${fmt(med(stats, 'herald_rps'))} req/s, p50 ${fmt(med(stats, 'herald_p50_ms'))} ms, p99 ${fmt(med(stats, 'herald_p99_ms'))} ms`,
        ratio: med(stats, 'ratio_of_pg'),
        baseline: `single INSERTs through pg, ${fmt(med(stats, 'pg_rps'))}/s`,
      },
    ];
  },
};
