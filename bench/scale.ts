/**
 * 6. Scale, two figures on one api over one database:
 * - depth: GET /api/v1/contacts?limit=50 at page 1 and at page 2,000 of 100,000 contacts
 *   (keyset cursor), one request at a time: the deep page's p50 latency against page 1's.
 *   The cursor of page 2,000 is the one the walk would hand out (the position of the last row
 *   of page 1,999, sealed with the run's key), so the run measures the deep request, not the walk.
 * - metrics: GET /api/v1/metrics?period=90d over a workspace with 1,000,000 email events (and
 *   their daily rollup), one request at a time, against the same request for an empty workspace.
 */
import { createCursorCodec } from '../src/http/cursor.ts';
import { filteredList } from '../src/http/paging.ts';
import { explainAnalyze, LIST_PATH, listPageQuery } from './api-read.ts';
import type { BenchContext } from './lib/context.ts';
import { sampleLatency } from './lib/load.ts';
import { seedContacts, seedEmailEvents, withClient } from './lib/seed.ts';
import { fmt, med } from './lib/stats.ts';
import type { Benchmark } from './lib/types.ts';

const LIMIT = 50;
/** A pg query as explainAnalyze's arguments. */
const explained = (query: { text: string; values: unknown[] }): [string, unknown[]] => [query.text, query.values];
const METRICS_PATH = '/api/v1/metrics?period=90d';
/** Page 2,000 may take at most this multiple of page 1's p50. */
const DEPTH_TARGET = 1.5;

export const benchmark: Benchmark = {
  name: 'scale',
  description: `GET ${LIST_PATH} at page 1 vs page 2,000 of 100,000 contacts (keyset cursor), and GET ${METRICS_PATH} over 1,000,000 email events vs an empty workspace; one request at a time.`,

  async setup(context: BenchContext) {
    const quick = context.options.quick;
    const contacts = quick ? 10_000 : 100_000;
    const events = quick ? 100_000 : 1_000_000;
    const depth = contacts / LIMIT;

    const databaseUrl = await context.database();
    const workspace = await context.workspace(databaseUrl);
    const empty = await context.workspace(databaseUrl);
    let started = performance.now();
    await seedContacts(databaseUrl, workspace.orgId, contacts);
    await seedEmailEvents(databaseUrl, workspace.orgId, events);
    context.log(`seeded ${contacts} contacts and ${events} email events in ${Math.round(performance.now() - started)} ms`);

    const api = await context.start('api', await context.env(databaseUrl));
    const headers = { Authorization: `Bearer ${workspace.key}` };

    const last = await withClient(databaseUrl, (client) =>
      client.query<{ id: string; created_at: Date }>(
        'select id, created_at from contacts where org_id = $1 order by created_at desc, id desc offset $2 limit 1',
        [workspace.orgId, (depth - 1) * LIMIT - 1],
      ),
    );
    const position = last.rows[0];
    if (!position) throw new Error('no row at the depth of the last page');
    const cursors = createCursorCodec(Buffer.from(context.services.encryptionKey, 'base64'));
    const cursor = cursors.encode(filteredList('contacts', { limit: LIMIT }).list, workspace.orgId, {
      sortValue: position.created_at,
      id: position.id,
    });
    const deepPath = `${LIST_PATH}&cursor=${encodeURIComponent(cursor)}`;

    started = performance.now();
    const response = await fetch(`${api.url}${deepPath}`, { headers });
    const page = (await response.json()) as { data?: { id: string }[]; meta?: { pagination?: { has_more: boolean } } };
    if (response.status !== 200 || page.data?.length !== LIMIT || page.meta?.pagination?.has_more !== false) {
      throw new Error(`page ${depth} answered ${response.status}: ${JSON.stringify(page).slice(0, 300)}`);
    }
    context.note(
      `EXPLAIN ANALYZE of page ${depth}`,
      await explainAnalyze(databaseUrl, ...explained(listPageQuery(workspace.orgId, { sortValue: position.created_at, id: position.id }))),
    );

    const metrics = await fetch(`${api.url}${METRICS_PATH}`, { headers });
    if (metrics.status !== 200) throw new Error(`GET ${METRICS_PATH} answered ${metrics.status}: ${(await metrics.text()).slice(0, 300)}`);
    context.log(`first GET ${METRICS_PATH}: ${Math.round(performance.now() - started)} ms (page ${depth} included)`);

    const oneAtATime = (path: string, key: string, durationSec: number) =>
      sampleLatency(`${api.url}${path}`, { Authorization: `Bearer ${key}` }, durationSec);
    const slice = Math.max(2, context.options.durationSec / 2);

    return {
      async warmup() {
        await oneAtATime(LIST_PATH, workspace.key, 1);
        await oneAtATime(deepPath, workspace.key, 1);
        await oneAtATime(METRICS_PATH, workspace.key, 2);
        await oneAtATime(METRICS_PATH, empty.key, 1);
      },
      async run() {
        const first = await oneAtATime(LIST_PATH, workspace.key, slice);
        const deep = await oneAtATime(deepPath, workspace.key, slice);
        const full = await oneAtATime(METRICS_PATH, workspace.key, slice);
        const none = await oneAtATime(METRICS_PATH, empty.key, slice);
        return {
          page1_p50_ms: first.p50Ms,
          page1_p99_ms: first.p99Ms,
          deep_page_p50_ms: deep.p50Ms,
          deep_page_p99_ms: deep.p99Ms,
          depth_ratio: deep.p50Ms / first.p50Ms,
          metrics_p50_ms: full.p50Ms,
          metrics_p99_ms: full.p99Ms,
          metrics_empty_p50_ms: none.p50Ms,
          metrics_ratio: full.p50Ms / none.p50Ms,
        };
      },
      close: () => Promise.resolve(),
    };
  },

  summarize(stats) {
    const depthRatio = med(stats, 'depth_ratio');
    return [
      {
        name: 'scale-depth',
        figure: `page 2,000 of 100,000 contacts p50 ${fmt(med(stats, 'deep_page_p50_ms'))} ms, p99 ${fmt(med(stats, 'deep_page_p99_ms'))} ms`,
        ratio: depthRatio,
        baseline: `page 1, p50 ${fmt(med(stats, 'page1_p50_ms'))} ms`,
        target: { text: `≤ ${DEPTH_TARGET * 100} % (flat)`, met: depthRatio <= DEPTH_TARGET },
      },
      {
        name: 'scale-metrics',
        figure: `GET /metrics?period=90d over 1,000,000 events p50 ${fmt(med(stats, 'metrics_p50_ms'))} ms, p99 ${fmt(med(stats, 'metrics_p99_ms'))} ms`,
        ratio: med(stats, 'metrics_ratio'),
        baseline: `the same request for an empty workspace, p50 ${fmt(med(stats, 'metrics_empty_p50_ms'))} ms`,
      },
    ];
  },
};
