/**
 * 1. API read: GET /api/v1/contacts?limit=50 through the whole api (authentication, rate
 * limiting, the idempotency layer, keyset page, serialization) with 50 keep-alive connections,
 * against (a) a bare Koa app answering the same JSON from memory and (b) the same SQL the api
 * issues (its prepared statement, by name, with the same values), through pg in a tight loop
 * with the api's pool size and the same 50 in flight.
 * Target: at least 50 % of (b).
 *
 * Herald runs as `herald api` with its defaults (one process, pool 10); the same api with
 * API_PROCESSES = 2 (one per core here, the pool of 10 split between them) is measured beside
 * it and reported too, and so is `herald all`: api, worker and smtp in one Node process on one
 * pool of 10, the layout `npm start` runs (`herald dev` hosts the same three in its process, with
 * the same Node flags), so the api shares its event loop with an idle worker's loops and polls.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KeysetPosition } from '../db/keyset.ts';
import { literalOf, namedQueryOf, type PreparedValue } from '../db/prepared.ts';
import { contactPageStatement } from '../src/modules/contacts/contacts.repo.ts';
import type { BenchContext } from './lib/context.ts';
import { runHttpLoad, runPgLoop, type LoadResult } from './lib/load.ts';
import { cpuAccount, postgresOf } from './lib/proc.ts';
import { databaseWorkPerRequest } from './lib/pg-activity.ts';
import { seedContacts, withClient } from './lib/seed.ts';
import { fmt, med } from './lib/stats.ts';
import type { Benchmark, Figures } from './lib/types.ts';

const CONNECTIONS = 50;
const POOL = 10;
/** `herald api` processes of the measured deployment (API_PROCESSES), sharing POOL connections. */
const API_PROCESSES = 2;
const LIMIT = 50;
/** Seconds `herald all` is watched idle before the loads. */
const IDLE_SEC = 3;

export const LIST_PATH = `/api/v1/contacts?limit=${LIMIT}`;

/**
 * The statement the api ran last for the contacts list (MikroORM inlines the values), from
 * pg_stat_activity (a leading SQL comment, such as the workspace marker, allowed); with
 * `containing`, only one that contains that text.
 */
export async function capturedListQuery(databaseUrl: string, containing = ''): Promise<string> {
  const found = await withClient(databaseUrl, (client) =>
    client.query<{ query: string }>(
      `select query from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()
          and query ~* '^\\s*(/\\*.*?\\*/\\s*)?(select|with)\\s' and query like '%from contacts%limit%'
          and strpos(query, $1) > 0
        limit 1`,
      [containing],
    ),
  );
  const query = found.rows[0]?.query;
  if (!query) throw new Error('could not find the list query of the api in pg_stat_activity');
  return query;
}

/** EXPLAIN (ANALYZE, BUFFERS) of a statement (with its `$n` values, if any), as text. */
export async function explainAnalyze(databaseUrl: string, sql: string, values: unknown[] = []): Promise<string> {
  const plan = await withClient(databaseUrl, (client) =>
    client.query<{ 'QUERY PLAN': string }>(`explain (analyze, buffers) ${sql}`, values),
  );
  const bound = values.length > 0 ? `\n-- ${values.map((value, i) => `$${i + 1} = ${JSON.stringify(value)}`).join(', ')}` : '';
  return `${sql}${bound}\n\n${plan.rows.map((row) => row['QUERY PLAN']).join('\n')}`;
}

/**
 * The api's list statement for a page of `orgId` (contacts.repo.ts), as the pg query the api
 * runs: a prepared statement by name with its values bound (db/prepared.ts queryPrepared).
 */
export function listPageQuery(orgId: string, after?: KeysetPosition): { name: string; text: string; values: unknown[] } {
  return namedQueryOf(contactPageStatement(orgId, { limit: LIMIT, after }, {}));
}

function figures(prefix: string, result: LoadResult): Figures {
  return { [`${prefix}_rps`]: result.rps, [`${prefix}_p50_ms`]: result.p50Ms, [`${prefix}_p99_ms`]: result.p99Ms };
}

export const benchmark: Benchmark = {
  name: 'api-read',
  // `herald all` (npm start's layout) runs the worker, which polls Temporal.
  needsTemporal: true,
  description: `GET ${LIST_PATH} (auth, rate limit, idempotency on), ${CONNECTIONS} connections, against a bare Koa app serving the same JSON and the same SQL through pg (pool ${POOL}, ${CONNECTIONS} in flight).`,

  async setup(context: BenchContext) {
    const databaseUrl = await context.database();
    const workspace = await context.workspace(databaseUrl);
    await seedContacts(databaseUrl, workspace.orgId, context.options.quick ? 2_000 : 10_000);
    const api = await context.start(
      'api',
      await context.env(databaseUrl, { API_PROCESSES: String(API_PROCESSES), DATABASE_POOL_MAX: String(POOL / API_PROCESSES) }),
    );
    const single = await context.start('api', await context.env(databaseUrl, { DATABASE_POOL_MAX: String(POOL) }));
    // Profiled (--profile): the layout users run.
    const allInOne = await context.start('all', await context.env(databaseUrl, { DATABASE_POOL_MAX: String(POOL) }), { profile: true });
    const headers = { Authorization: `Bearer ${workspace.key}` };

    const response = await fetch(`${api.url}${LIST_PATH}`, { headers });
    const page = (await response.json()) as { data?: unknown[] };
    if (response.status !== 200 || page.data?.length !== LIMIT) {
      throw new Error(`GET ${LIST_PATH} answered ${response.status} with ${JSON.stringify(page).slice(0, 300)}`);
    }
    // The baseline runs the api's own statement, prepared by name on each connection as the api's is.
    const query = listPageQuery(workspace.orgId);
    const sql = await capturedListQuery(databaseUrl);
    if (sql.trim() !== query.text.trim()) throw new Error(`the api ran another list statement than contacts.repo.ts builds:\n${sql}`);
    context.note('EXPLAIN ANALYZE of the list query', await explainAnalyze(databaseUrl, query.text, query.values));
    context.note(
      'Database work per request',
      await databaseWorkPerRequest(databaseUrl, 100, async () => {
        await (await fetch(`${api.url}${LIST_PATH}`, { headers })).arrayBuffer();
      }),
    );

    const file = join(context.scratch, 'page.json');
    writeFileSync(file, JSON.stringify(page));
    const koaPort = await context.freePort();
    await context.spawnNode('bare-koa', [join(import.meta.dirname, 'lib/bare-koa.ts'), file, String(koaPort)], 'bare koa listening');

    const herald = (durationSec: number) => runHttpLoad({ url: `${api.url}${LIST_PATH}`, headers, connections: CONNECTIONS, durationSec });
    const heraldSingle = (durationSec: number) =>
      runHttpLoad({ url: `${single.url}${LIST_PATH}`, headers, connections: CONNECTIONS, durationSec });
    const heraldAll = (durationSec: number) =>
      runHttpLoad({ url: `${allInOne.url}${LIST_PATH}`, headers, connections: CONNECTIONS, durationSec });
    const koa = (durationSec: number) =>
      runHttpLoad({ url: `http://127.0.0.1:${koaPort}${LIST_PATH}`, connections: CONNECTIONS, durationSec });
    // The same statement as MikroORM ran it before (values inlined, parsed and planned each time).
    const inlined = query.text.replace(/\$(\d+)/g, (_match, n: string) => literalOf(query.values[Number(n) - 1] as PreparedValue));
    const pgInlined = (durationSec: number) =>
      runPgLoop({ databaseUrl, poolMax: POOL, concurrency: CONNECTIONS, durationSec, statement: () => ({ text: inlined, values: [] }) });
    const pgLoop = (durationSec: number) =>
      runPgLoop({ databaseUrl, poolMax: POOL, concurrency: CONNECTIONS, durationSec, statement: () => query });
    const { durationSec, warmupSec } = context.options;

    return {
      async warmup() {
        await herald(warmupSec);
        await heraldSingle(Math.min(2, warmupSec));
        await heraldAll(Math.min(2, warmupSec));
        await koa(Math.min(2, warmupSec));
        await pgLoop(Math.min(2, warmupSec));
      },
      async run() {
        // What the idle worker, smtp and api of `herald all` spend while nothing is asked of them.
        const idle = cpuAccount({ all: allInOne.pid });
        await new Promise((resolve) => setTimeout(resolve, IDLE_SEC * 1000));
        const idleCpu = idle.perUnit(IDLE_SEC);
        const heraldResult = await herald(durationSec);
        const cpu = cpuAccount({ api: single.pid, postgres: postgresOf(databaseUrl) });
        const singleResult = await heraldSingle(durationSec);
        const perRequest = cpu.perUnit(singleResult.total - singleResult.failures);
        const allCpu = cpuAccount({ all: allInOne.pid, postgres: postgresOf(databaseUrl) });
        const allResult = await heraldAll(durationSec);
        const allPerRequest = allCpu.perUnit(allResult.total - allResult.failures);
        const koaResult = await koa(durationSec);
        const pgResult = await pgLoop(durationSec);
        const pgInlinedResult = await pgInlined(durationSec);
        // The baseline is the faster of the two ways pg can run the statement: a loop of 50 callers in
        // one Node process ran the inlined text faster than the named statement (pg's Bind and
        // Describe per call) in most runs, and the api must not look better for that.
        const pgBest = Math.max(pgResult.rps, pgInlinedResult.rps);
        return {
          ...figures('herald', heraldResult),
          ...figures('herald_one_process', singleResult),
          ...figures('herald_all', allResult),
          ...figures('koa', koaResult),
          ...figures('pg', pgResult),
          ...figures('pg_inlined', pgInlinedResult),
          all_idle_cpu_ms_per_s: idleCpu.all!,
          ratio_of_pg: heraldResult.rps / pgBest,
          one_process_ratio_of_pg: singleResult.rps / pgBest,
          one_process_cpu_ms_per_request_api: perRequest.api!,
          one_process_cpu_ms_per_request_postgres: perRequest.postgres!,
          all_ratio_of_pg: allResult.rps / pgBest,
          all_cpu_ms_per_request: allPerRequest.all!,
          all_cpu_ms_per_request_postgres: allPerRequest.postgres!,
          ratio_of_koa: heraldResult.rps / koaResult.rps,
        };
      },
      close: () => Promise.resolve(),
    };
  },

  summarize(stats) {
    const figure = (prefix: string) =>
      `${fmt(med(stats, `${prefix}_rps`))} req/s, p50 ${fmt(med(stats, `${prefix}_p50_ms`))} ms, p99 ${fmt(med(stats, `${prefix}_p99_ms`))} ms`;
    const ofPg = med(stats, 'one_process_ratio_of_pg');
    const allOfPg = med(stats, 'all_ratio_of_pg');
    const baseline = `the same SQL through pg, the faster of prepared as the api runs it (${fmt(med(stats, 'pg_rps'))} q/s) and inlined (${fmt(med(stats, 'pg_inlined_rps'))} q/s)`;
    const target = (ratio: number, prefix: string) => ({
      text: '≥ 50 %, p99 < 50 ms',
      met: ratio >= 0.5 && med(stats, `${prefix}_p99_ms`) < 50,
    });
    return [
      {
        name: 'api-read',
        figure: `${figure('herald_one_process')} (one api process, pool ${POOL}; api ${fmt(med(stats, 'one_process_cpu_ms_per_request_api'))} + PostgreSQL ${fmt(med(stats, 'one_process_cpu_ms_per_request_postgres'))} CPU ms per request)`,
        ratio: ofPg,
        baseline,
        target: target(ofPg, 'herald_one_process'),
      },
      {
        name: 'api-read-npm-start',
        figure: `${figure('herald_all')} (\`herald all\`: api, worker and smtp in one process as \`npm start\` runs them, pool ${POOL}; idle ${fmt(med(stats, 'all_idle_cpu_ms_per_s'))} CPU ms/s; ${fmt(med(stats, 'all_cpu_ms_per_request'))} + PostgreSQL ${fmt(med(stats, 'all_cpu_ms_per_request_postgres'))} CPU ms per request)`,
        ratio: allOfPg,
        baseline,
        target: target(allOfPg, 'herald_all'),
      },
      {
        name: 'api-read-two-processes',
        figure: `${figure('herald')} (API_PROCESSES=${API_PROCESSES}, pool ${POOL / API_PROCESSES} each)`,
        ratio: med(stats, 'ratio_of_pg'),
        baseline,
      },
      {
        name: 'api-read-vs-koa',
        figure: figure('herald_one_process'),
        ratio: med(stats, 'herald_one_process_rps') / med(stats, 'koa_rps'),
        baseline: `a bare Koa app serving the same JSON, ${fmt(med(stats, 'koa_rps'))} req/s`,
      },
    ];
  },
};
